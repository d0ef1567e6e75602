// scripts/gpu-build.sh detect, what the GPU build would hand CMake for
// CUDA, without building: the architecture comes from the first GPU's
// compute capability (nvidia-smi) unless SHEFL_CUDA_ARCH says otherwise,
// nvcc from CUDACXX, then PATH, then $CUDA_HOME/bin/nvcc; with neither an
// architecture nor an nvcc it fails, naming what to set. The GPU and the
// toolkit are stand-ins: small scripts in a temporary folder that print
// what nvidia-smi and nvcc would. PATH is a folder of links to the
// machine's own programs without its nvidia-smi and nvcc, so a GPU machine
// runs these cases as a bare one does.
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace shefl {
namespace {

using namespace testing;

const std::string kScript = std::string(SHEFL_SOURCE_DIR) + "/scripts/gpu-build.sh";

// An executable shell script at `path` that prints `out` (and exits `rc`).
void FakeProgram(const std::string& path, const std::string& out, int rc = 0) {
  WriteFile(path, "#!/bin/sh\nprintf '%s\\n' '" + out + "'\nexit " + std::to_string(rc) + "\n");
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
}

// A folder of links to every program of /usr/bin and /bin except the GPU's
// and the toolkit's: the machine's tools without a real nvidia-smi or nvcc.
void LinkSystemPrograms(const std::string& dir) {
  fs::create_directories(dir);
  for (const char* from : {"/usr/bin", "/bin"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(from, ec)) {
      const std::string name = e.path().filename().string();
      if (name == "nvidia-smi" || name == "nvcc") continue;
      const fs::path link = fs::path(dir) / name;
      if (!fs::exists(fs::symlink_status(link))) fs::create_symlink(e.path(), link, ec);
    }
  }
}

// A scratch machine: `gpu/` for a stand-in nvidia-smi, `cuda/` for a
// stand-in nvcc, `sys/` for the machine's other programs.
struct Machine {
  TempDir dir;
  Machine() {
    fs::create_directories(dir / "gpu");
    fs::create_directories(dir / "cuda");
    LinkSystemPrograms(dir / "sys");
  }
  // `gpu-build.sh detect` with only `env` set (and PATH = `path`, a
  // colon-separated list of this machine's folders, then sys/). The
  // toolkit's default place is an empty folder of the scratch machine, and
  // the Torch prefix is given, so neither the real toolkit nor python3 is
  // asked.
  ProcessResult Detect(const std::string& path, const std::vector<std::string>& env) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "HOME=" + dir.path(),
                                     "CUDA_HOME=" + (dir / "no-cuda"),
                                     "SHEFL_TORCH_PREFIX=" + (dir / "torch")};
    std::string p;
    if (!path.empty()) {
      for (size_t i = 0, j; i <= path.size(); i = j + 1) {
        j = path.find(':', i);
        if (j == std::string::npos) j = path.size();
        p += dir / path.substr(i, j - i);
        p += ":";
      }
    }
    argv.push_back("PATH=" + p + (dir / "sys"));
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {"/bin/bash", kScript, "detect"});
    return RunProcess(argv, 60);
  }
};

TEST_CASE("gpu-build detect takes the architecture from the first GPU's compute capability") {
  Machine m;
  // Two GPUs: the first one's capability counts.
  FakeProgram(m.dir / "gpu/nvidia-smi", "8.6\n7.5");
  FakeProgram(m.dir / "cuda/nvcc", "Cuda compilation tools, release 12.4, V12.4.131");
  const ProcessResult r = m.Detect("gpu:cuda", {});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("TORCH_CUDA_ARCH_LIST=8.6"));
  CHECK_THAT(r.output, Catch::Contains("CMAKE_CUDA_ARCHITECTURES=86"));
  CHECK_THAT(r.output, Catch::Contains("from nvidia-smi"));
  CHECK_THAT(r.output, Catch::Contains("nvcc: " + (m.dir / "cuda/nvcc") + " (from PATH)"));
  CHECK_THAT(r.output, Catch::Contains("release 12.4"));
  CHECK_THAT(r.output, Catch::Contains("torch prefix: " + (m.dir / "torch")));
  // What configure is given, from the same functions.
  CHECK_THAT(r.output, Catch::Contains("cmake: -DCMAKE_CUDA_COMPILER=" + (m.dir / "cuda/nvcc") +
                                       " -DTORCH_CUDA_ARCH_LIST=8.6"
                                       " -DCMAKE_CUDA_ARCHITECTURES=86"
                                       " -DCMAKE_PREFIX_PATH=" + (m.dir / "torch")));

  // A capability of two digits before the point (10.0, 12.0).
  FakeProgram(m.dir / "gpu/nvidia-smi", "12.0");
  const ProcessResult big = m.Detect("gpu:cuda", {});
  INFO(big.output);
  CHECK(big.exit_code == 0);
  CHECK_THAT(big.output, Catch::Contains("-DCMAKE_CUDA_ARCHITECTURES=120"));
}

TEST_CASE("gpu-build detect lets SHEFL_CUDA_ARCH override the GPU, as 8.0 or 80") {
  Machine m;
  FakeProgram(m.dir / "gpu/nvidia-smi", "8.6");
  FakeProgram(m.dir / "cuda/nvcc", "release 12.4");
  for (const char* given : {"8.0", "80"}) {
    const ProcessResult r = m.Detect("gpu:cuda", {std::string("SHEFL_CUDA_ARCH=") + given});
    INFO(given << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("TORCH_CUDA_ARCH_LIST=8.0"));
    CHECK_THAT(r.output, Catch::Contains("-DCMAKE_CUDA_ARCHITECTURES=80"));
    CHECK_THAT(r.output, Catch::Contains("from SHEFL_CUDA_ARCH"));
  }
  // Without any GPU the override is enough.
  const ProcessResult bare = m.Detect("cuda", {"SHEFL_CUDA_ARCH=9.0"});
  INFO(bare.output);
  CHECK(bare.exit_code == 0);
  CHECK_THAT(bare.output, Catch::Contains("-DCMAKE_CUDA_ARCHITECTURES=90"));
  // A value that is no compute capability is refused, naming it.
  const ProcessResult bad = m.Detect("gpu:cuda", {"SHEFL_CUDA_ARCH=sm_86"});
  INFO(bad.output);
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("SHEFL_CUDA_ARCH='sm_86'"));
}

TEST_CASE("gpu-build detect prefers CUDACXX to an nvcc on PATH") {
  Machine m;
  FakeProgram(m.dir / "gpu/nvidia-smi", "8.9");
  FakeProgram(m.dir / "cuda/nvcc", "release 12.1");
  fs::create_directories(m.dir / "toolkit/bin");
  FakeProgram(m.dir / "toolkit/bin/nvcc", "Cuda compilation tools, release 12.8, V12.8.61");
  const ProcessResult r = m.Detect("gpu:cuda", {"CUDACXX=" + (m.dir / "toolkit/bin/nvcc")});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output,
             Catch::Contains("nvcc: " + (m.dir / "toolkit/bin/nvcc") + " (from CUDACXX)"));
  CHECK_THAT(r.output, Catch::Contains("-DCMAKE_CUDA_COMPILER=" + (m.dir / "toolkit/bin/nvcc")));
  CHECK_THAT(r.output, Catch::Contains("release 12.8"));
  // A CUDACXX that is not there is an error, not a quiet fallback to PATH.
  const ProcessResult gone = m.Detect("gpu:cuda", {"CUDACXX=" + (m.dir / "nowhere/nvcc")});
  INFO(gone.output);
  CHECK(gone.exit_code != 0);
  CHECK_THAT(gone.output, Catch::Contains("CUDACXX="));
}

TEST_CASE("gpu-build detect falls back to CUDA_HOME's nvcc and fails naming CUDACXX without one") {
  Machine m;
  FakeProgram(m.dir / "gpu/nvidia-smi", "8.0");
  // Neither CUDACXX, nor PATH, nor the toolkit's default place.
  const ProcessResult none = m.Detect("gpu", {});
  INFO(none.output);
  CHECK(none.exit_code != 0);
  CHECK_THAT(none.output, Catch::Contains("no nvcc"));
  CHECK_THAT(none.output, Catch::Contains("CUDACXX"));
  CHECK_THAT(none.output, Catch::Contains("PATH"));
  CHECK_THAT(none.output, Catch::Contains(m.dir / "no-cuda/bin/nvcc"));
  // The architecture is still reported beside the error.
  CHECK_THAT(none.output, Catch::Contains("CMAKE_CUDA_ARCHITECTURES=80"));

  // The default place, once it holds an nvcc.
  fs::create_directories(m.dir / "no-cuda/bin");
  FakeProgram(m.dir / "no-cuda/bin/nvcc", "release 13.0");
  const ProcessResult home = m.Detect("gpu", {});
  INFO(home.output);
  CHECK(home.exit_code == 0);
  CHECK_THAT(home.output, Catch::Contains("-DCMAKE_CUDA_COMPILER=" + (m.dir / "no-cuda/bin/nvcc")));
}

TEST_CASE("gpu-build detect without nvidia-smi or SHEFL_CUDA_ARCH fails naming SHEFL_CUDA_ARCH") {
  Machine m;
  FakeProgram(m.dir / "cuda/nvcc", "release 12.4");
  const ProcessResult r = m.Detect("cuda", {});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("no CUDA architecture"));
  CHECK_THAT(r.output, Catch::Contains("nvidia-smi"));
  CHECK_THAT(r.output, Catch::Contains("SHEFL_CUDA_ARCH"));

  // An nvidia-smi that cannot answer (no GPU visible, an old driver) is
  // the same error, with what it said.
  FakeProgram(m.dir / "gpu/nvidia-smi", "Field \"compute_cap\" is not a valid field to query.", 2);
  const ProcessResult old = m.Detect("gpu:cuda", {});
  INFO(old.output);
  CHECK(old.exit_code != 0);
  CHECK_THAT(old.output, Catch::Contains("not a valid field"));
  CHECK_THAT(old.output, Catch::Contains("SHEFL_CUDA_ARCH"));

  // SHEFL_CUDA_ARCH=none: a build without CUDA, which needs no nvcc either.
  const ProcessResult cpu = m.Detect("", {"SHEFL_CUDA_ARCH=none"});
  INFO(cpu.output);
  CHECK(cpu.exit_code == 0);
  CHECK_THAT(cpu.output, Catch::Contains("arch: none"));
  CHECK_THAT(cpu.output, Catch::Contains("nvcc: not used"));
  CHECK_THAT(cpu.output, Catch::Contains("cmake: -DCMAKE_PREFIX_PATH="));
  CHECK_THAT(cpu.output, !Catch::Contains("-DCMAKE_CUDA"));
}

}  // namespace
}  // namespace shefl
