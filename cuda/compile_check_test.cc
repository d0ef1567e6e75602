// The CUDA sources compile, on a machine with nvcc but a CPU-only LibTorch
// (CI): cuda/compile_check.cmake runs nvcc on cuda/*.cu and a syntax check
// of the torch-side glue with SHEFL_WITH_CUDA. Registered only there
// (cuda/CMakeLists.txt); a CUDA build compiles them for real instead.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <catch2/catch.hpp>

namespace {

// Output (stdout and stderr) of the check for `part`, and its exit status.
std::string RunCheck(const std::string& part, int* status) {
  const std::string command = std::string("'") + SHEFL_CMAKE_COMMAND +
                              "' -DARGS='" + SHEFL_CUDA_CHECK_ARGS +
                              "' -DPART=" + part + " -P '" +
                              SHEFL_CUDA_CHECK_SCRIPT + "' 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

}  // namespace

TEST_CASE("nvcc compiles every CUDA kernel source for sm_90") {
  int status = -1;
  const std::string out = RunCheck("kernels", &status);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(out.find("compiled ") != std::string::npos);
}

TEST_CASE("the CUDA glue and TopK's dispatch compile against c10 CUDA") {
  int status = -1;
  const std::string out = RunCheck("glue", &status);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(out.find("compiled ") != std::string::npos);
}
