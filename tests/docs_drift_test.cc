// Documentation that lists what the code has, held to the code, read from
// the source tree as it is:
//   - every Prometheus metric the coordinator and the daemon register
//     (`.Name("shefl_...")` in server/, client/, common/) is named in
//     docs/RUNNING.md ("Metrics");
//   - every module python/shefl_client imports from outside Python's
//     standard library and the package itself has its Debian package named
//     in python/README.md's install line (a module this test cannot map to
//     a package fails, naming it);
//   - what docs/CONFIGURATION.md says of configs/quick.yaml's ensemble
//     size is what the file sets, and a `configs/<name>.yaml:N: key 'a.b'`
//     quoted in a document is on line N of that file.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace shefl {
namespace {

using testing::ReadFile;
using testing::RunProcess;

const fs::path kRoot = SHEFL_SOURCE_DIR;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether `name` occurs in `text` as a whole word (shefl_round is not
// found inside shefl_rounds_planned).
bool HasWord(const std::string& text, const std::string& name) {
  for (size_t i = text.find(name); i != std::string::npos; i = text.find(name, i + 1)) {
    const bool left = i == 0 || !IsIdentChar(text[i - 1]);
    const size_t end = i + name.size();
    const bool right = end == text.size() || !IsIdentChar(text[end]);
    if (left && right) return true;
  }
  return false;
}

// metric name -> the source file that registers it.
std::map<std::string, std::string> RegisteredMetrics() {
  static const std::regex kName(R"re(\.Name\(\s*"(shefl_[a-z0-9_]+)")re");
  std::map<std::string, std::string> out;
  for (const char* dir : {"server", "client", "common"}) {
    for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      const std::string text = ReadFile(e.path().string());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), kName);
           it != std::sregex_iterator(); ++it)
        out.emplace((*it)[1].str(), fs::relative(e.path(), kRoot).string());
    }
  }
  return out;
}

TEST_CASE("every metric the binaries register is listed in docs/RUNNING.md") {
  const std::map<std::string, std::string> metrics = RegisteredMetrics();
  // The coordinator's and the daemon's registries hold dozens; a scan that
  // finds a handful has lost its way.
  REQUIRE(metrics.size() >= 30);
  CHECK(metrics.count("shefl_round") == 1);
  CHECK(metrics.count("shefl_client_state") == 1);
  const std::string running = ReadFile((kRoot / "docs/RUNNING.md").string());
  std::vector<std::string> missing;
  for (const auto& [name, file] : metrics)
    if (!HasWord(running, name)) missing.push_back(name + " (" + file + ")");
  INFO("registered but not in docs/RUNNING.md:\n" << [&] {
    std::string s;
    for (const std::string& m : missing) s += "  " + m + "\n";
    return s;
  }());
  CHECK(missing.empty());
}

// Python's own modules, as the interpreter that runs the client knows them.
std::set<std::string> StdlibModules() {
  const testing::ProcessResult r = RunProcess(
      {"/usr/bin/python3", "-c", "import sys; print('\\n'.join(sorted(sys.stdlib_module_names)))"},
      60);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::set<std::string> out;
  for (const std::string& l : Lines(r.output))
    if (!l.empty()) out.insert(l);
  REQUIRE(out.count("os") == 1);
  return out;
}

// module -> file:line of each top-level module python/shefl_client
// imports, generated gRPC modules (`*_pb2*.py`) and relative imports left
// out. Only whole `import a, b as c` and `from a.b import x` statements
// count, so prose in a docstring ("from another round, or ...") does not.
std::map<std::string, std::string> PythonImports() {
  static const std::regex kImport(
      R"(^\s*import\s+([A-Za-z_][\w.]*(\s+as\s+\w+)?(\s*,\s*[A-Za-z_][\w.]*(\s+as\s+\w+)?)*)\s*(#.*)?$)");
  static const std::regex kFrom(R"(^\s*from\s+([A-Za-z_][\w.]*)\s+import\s+\S)");
  static const std::regex kModule(R"(([A-Za-z_]\w*)[\w.]*(\s+as\s+\w+)?)");
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "python/shefl_client")) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || e.path().extension() != ".py" ||
        name.find("_pb2") != std::string::npos)
      continue;
    const std::vector<std::string> lines = Lines(ReadFile(e.path().string()));
    for (size_t n = 0; n < lines.size(); ++n) {
      const std::string where =
          fs::relative(e.path(), kRoot).string() + ":" + std::to_string(n + 1);
      std::smatch m;
      if (std::regex_match(lines[n], m, kImport)) {
        const std::string list = m[1].str();
        for (auto it = std::sregex_iterator(list.begin(), list.end(), kModule);
             it != std::sregex_iterator(); ++it)
          out.emplace((*it)[1].str(), where);
      } else if (std::regex_search(lines[n], m, kFrom)) {
        const std::string mod = m[1].str();
        out.emplace(mod.substr(0, mod.find('.')), where);
      }
    }
  }
  return out;
}

TEST_CASE("every Debian package the Python client imports is in python/README.md") {
  // Module -> the Debian 12 package that provides it.
  const std::map<std::string, std::string> kDebian = {
      {"torch", "python3-torch"},   {"numpy", "python3-numpy"},
      {"grpc", "python3-grpcio"},   {"google", "python3-protobuf"},
      {"yaml", "python3-yaml"},     {"cryptography", "python3-cryptography"},
      {"pandas", "python3-pandas"},
  };
  const std::set<std::string> stdlib = StdlibModules();
  const std::map<std::string, std::string> imports = PythonImports();
  REQUIRE(imports.count("torch") == 1);  // the scan found the client's imports
  const std::string readme = ReadFile((kRoot / "python/README.md").string());
  for (const auto& [module, where] : imports) {
    if (stdlib.count(module) || module == "shefl_client") continue;
    INFO(module << " imported at " << where);
    const auto package = kDebian.find(module);
    if (package == kDebian.end()) {
      FAIL_CHECK("no Debian package known for the module '"
           << module << "': add it to this test's map and its package to python/README.md");
      continue;
    }
    INFO("its package " << package->second);
    CHECK(HasWord(readme, package->second));
  }
}

TEST_CASE("what the docs say of configs/quick.yaml matches the file") {
  const std::vector<std::string> quick = Lines(ReadFile((kRoot / "configs/quick.yaml").string()));
  // model.num_models: the `num_models:` line under `model:`.
  int models = -1;
  bool in_model = false;
  static const std::regex kSection(R"(^([A-Za-z_]\w*):\s*(#.*)?$)");
  static const std::regex kNum(R"(^\s+num_models:\s*([0-9]+)\b.*)");
  for (const std::string& l : quick) {
    std::smatch m;
    if (std::regex_match(l, m, kSection)) in_model = m[1].str() == "model";
    if (in_model && std::regex_match(l, m, kNum)) models = std::stoi(m[1].str());
  }
  REQUIRE(models > 0);

  // docs/CONFIGURATION.md's table of configs: the quick.yaml row's "M = N".
  const std::vector<std::string> doc =
      Lines(ReadFile((kRoot / "docs/CONFIGURATION.md").string()));
  static const std::regex kM(R"(\bM = ([0-9]+)\b)");
  int rows = 0;
  for (const std::string& l : doc) {
    if (l.rfind("| `quick.yaml` |", 0) != 0) continue;
    ++rows;
    std::smatch m;
    INFO(l);
    REQUIRE(std::regex_search(l, m, kM));
    CHECK(std::stoi(m[1].str()) == models);
  }
  CHECK(rows == 1);
}

TEST_CASE("a config line quoted in the docs is where the docs say") {
  // `configs/<name>.yaml:N: key 'a.b'` (what the loader prints) in README.md
  // and docs/*.md: line N of configs/<name>.yaml sets b.
  static const std::regex kCite(R"((configs/[\w.-]+\.yaml):([0-9]+): key '([\w.]+)')");
  std::vector<fs::path> docs = {kRoot / "README.md"};
  for (const auto& e : fs::directory_iterator(kRoot / "docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  int seen = 0;
  for (const fs::path& doc : docs) {
    const std::string text = ReadFile(doc.string());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kCite);
         it != std::sregex_iterator(); ++it) {
      ++seen;
      const std::string file = (*it)[1].str(), key = (*it)[3].str();
      const size_t line = std::stoul((*it)[2].str());
      INFO(fs::relative(doc, kRoot).string() << " quotes " << it->str());
      REQUIRE(fs::exists(kRoot / file));
      const std::vector<std::string> lines = Lines(ReadFile((kRoot / file).string()));
      REQUIRE(line >= 1);
      REQUIRE(line <= lines.size());
      const std::string leaf = key.substr(key.rfind('.') + 1);
      static const std::regex kKey(R"(^\s*([\w]+):)");
      std::smatch m;
      const std::string& at = lines[line - 1];
      INFO("line " << line << ": " << at);
      CHECK((std::regex_search(at, m, kKey) && m[1].str() == leaf));
    }
  }
  CHECK(seen > 0);  // docs/CONFIGURATION.md quotes some
}

}  // namespace
}  // namespace shefl
