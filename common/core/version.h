// The build's version, for every binary's --version: CMake's project()
// VERSION and the git commit the build was configured from
// (cmake/version.cmake).
#ifndef SHEFL_COMMON_CORE_VERSION_H_
#define SHEFL_COMMON_CORE_VERSION_H_

#include <string>

namespace shefl {

// "0.9.0".
std::string Version();
// The short commit hash, or "unknown" for a build configured without git.
std::string GitCommit();
// "<program> 0.9.0 (git abc1234)", newline-terminated.
std::string VersionLine(const std::string& program);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_VERSION_H_
