// docker/Dockerfile checked without a docker engine (none runs here): the
// packages both stages install exist in Debian's archive, the runtime
// stage holds no compiler and runs as a user, and every shared library
// that ldd lists for the built binaries comes from a package the runtime
// stage installs (directly or as a dependency).
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::RunProcess;

const std::string kDockerfile = std::string(SHEFL_SOURCE_DIR) + "/docker/Dockerfile";

// The Dockerfile with continuation lines joined.
std::string Joined() {
  const std::string text = testing::ReadFile(kDockerfile);
  return std::regex_replace(text, std::regex("\\\\\n\\s*"), " ");
}

// The words of `ARG name="..."`.
std::vector<std::string> PackagesOf(const std::string& name) {
  std::smatch m;
  const std::string text = Joined();
  REQUIRE(std::regex_search(text, m, std::regex("ARG " + name + "=\"([^\"]*)\"")));
  std::istringstream in(m[1].str());
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string Run(const std::string& cmd) {
  auto r = RunProcess({"/bin/sh", "-c", cmd}, 300);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

TEST_CASE("every package the Dockerfile installs is in Debian's archive") {
  std::vector<std::string> all = PackagesOf("BUILD_PACKAGES");
  const std::vector<std::string> runtime = PackagesOf("RUNTIME_PACKAGES");
  all.insert(all.end(), runtime.begin(), runtime.end());
  CHECK(all.size() >= 20u);
  for (const std::string& p : all) {
    INFO(p);
    CHECK(RunProcess({"/usr/bin/apt-cache", "show", p}, 60).exit_code == 0);
  }
}

// The runtime packages and everything they depend on, recursively.
std::set<std::string> RuntimeClosure() {
  std::string cmd =
      "apt-cache depends --recurse --no-recommends --no-suggests "
      "--no-conflicts --no-breaks --no-replaces --no-enhances";
  for (const std::string& p : PackagesOf("RUNTIME_PACKAGES")) cmd += " " + p;
  std::istringstream in(Run(cmd));
  std::set<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != ' ' && line[0] != '<') out.insert(line);
  return out;
}

// path -> the package that installed it (`real`: asked by the path with
// its links resolved).
std::map<std::string, std::string> Owners(const std::vector<std::string>& paths,
                                          bool real) {
  std::map<std::string, std::string> out;
  if (paths.empty()) return out;
  std::map<std::string, std::string> asked;  // what dpkg is asked -> path
  std::string cmd = "dpkg -S";
  for (const std::string& p : paths) {
    const std::string q =
        real ? testing::RunProcess({"/bin/readlink", "-f", p}, 30).output : p;
    const std::string key = q.substr(0, q.find('\n'));
    asked[key] = p;
    cmd += " '" + key + "'";
  }
  std::istringstream in(RunProcess({"/bin/sh", "-c", cmd + " 2>/dev/null"}, 300).output);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string pkgs = line.substr(0, colon), path = line.substr(colon + 2);
    if (asked.count(path)) out[asked[path]] = pkgs.substr(0, pkgs.find(':'));
  }
  return out;
}

TEST_CASE("the runtime stage provides every library the binaries load and no compiler") {
  const std::set<std::string> closure = RuntimeClosure();
  for (const char* tool : {"gcc", "g++", "gcc-12", "g++-12", "clang-14", "cmake",
                           "build-essential", "libtorch-dev"}) {
    INFO(tool);
    CHECK(closure.count(tool) == 0);
  }
  const std::string bin = testing::BinDir();
  const std::string libs = Run("ldd " + bin + "/shefl " + bin + "/shefl-coordinator " +
                               bin + "/shefl-client | awk '/=> \\//{print $3}' | sort -u");
  std::vector<std::string> paths;
  std::istringstream in(libs);
  for (std::string lib; std::getline(in, lib);)
    if (!lib.empty()) paths.push_back(lib);
  // dpkg knows a library by the path its package installed it under: ask
  // for the path ldd gave, then for the real path of the rest (one dpkg
  // run each, not one per library).
  std::map<std::string, std::string> owner = Owners(paths, false);
  std::vector<std::string> rest;
  for (const std::string& p : paths)
    if (!owner.count(p)) rest.push_back(p);
  for (const auto& [p, pkg] : Owners(rest, true)) owner[p] = pkg;
  int checked = 0;
  for (const std::string& lib : paths) {
    INFO(lib << " from '" << owner[lib] << "'");
    CHECK(closure.count(owner[lib]) == 1);
    ++checked;
  }
  CHECK(checked > 20);
  std::printf("docker: %d libraries of the binaries, all from the %zu packages of the "
              "runtime stage's closure\n", checked, closure.size());
}

TEST_CASE("the runtime stage runs as an unprivileged user") {
  const std::string text = Joined();
  const size_t runtime = text.find("AS runtime");
  REQUIRE(runtime != std::string::npos);
  std::smatch m;
  const std::string tail = text.substr(runtime);
  REQUIRE(std::regex_search(tail, m, std::regex("\\nUSER (\\S+)")));
  CHECK(m[1] != "root");
  CHECK(m[1] != "0");
  CHECK(tail.find("useradd --system") != std::string::npos);
  CHECK(tail.find("OPENBLAS_NUM_THREADS=1") != std::string::npos);
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

// docker/Dockerfile.cuda cannot be built here (no engine, no NVIDIA
// images): what can be held is that it configures with options the build
// has, reads what `scripts/gpu-build.sh pack` writes, and that the prefix
// it unpacks holds every library the binaries load directly, except
// LibTorch's and the C and C++ runtimes, which the CUDA LibTorch and the
// image bring.
TEST_CASE("Dockerfile.cuda builds from the prefix that gpu-build.sh packs") {
  const std::string root = SHEFL_SOURCE_DIR;
  const std::string cuda = std::regex_replace(testing::ReadFile(root + "/docker/Dockerfile.cuda"),
                                              std::regex("\\\\\n\\s*"), " ");
  const std::string cmake = testing::ReadFile(root + "/CMakeLists.txt");
  const std::string pack = testing::ReadFile(root + "/scripts/gpu-build.sh");
  for (const char* option : {"SHEFL_BUILD_TESTS", "SHEFL_PREFIX"}) {
    INFO(option);
    CHECK(cuda.find(std::string("-D") + option + "=") != std::string::npos);
    CHECK(cmake.find(option) != std::string::npos);
  }
  for (const char* carried : {".gpu/prefix.tar.xz", ".gpu/fashion-mnist"}) {
    INFO(carried);
    CHECK(cuda.find(carried) != std::string::npos);
  }
  CHECK(pack.find("TARBALL=\"$CARRY/prefix.tar.xz\"") != std::string::npos);
  CHECK(pack.find("fashion-mnist") != std::string::npos);
  // The packages of gpu-build.sh's PACKAGES=( ... ).
  std::smatch m;
  REQUIRE(std::regex_search(pack, m, std::regex("\nPACKAGES=\\(([^)]*)\\)")));
  std::set<std::string> prefix;
  std::istringstream words(m[1].str());
  for (std::string w; words >> w;) prefix.insert(w);
  const std::set<std::string> brought = {"libc6", "libstdc++6", "libgcc-s1"};
  for (const char* bin : {"shefl-coordinator", "shefl-client", "shefl"}) {
    const std::string needed = Run("readelf -d " + testing::BinDir() + "/" + bin +
                                   " | sed -n 's/.*NEEDED.*\\[\\(.*\\)\\]/\\1/p'");
    std::istringstream libs(needed);
    for (std::string lib; libs >> lib;) {
      if (lib.rfind("libtorch", 0) == 0 || lib.rfind("libc10", 0) == 0) continue;
      const std::string owner = Run("dpkg -S '*x86_64-linux-gnu/" + lib + "' | head -1 | cut -d: -f1");
      const std::string package = owner.substr(0, owner.find_first_of("\n"));
      INFO(bin << " loads " << lib << " from " << package);
      CHECK((prefix.count(package) == 1 || brought.count(package) == 1));
    }
  }
}

}  // namespace
}  // namespace shefl
