#include "common/core/version.h"

// common/core/CMakeLists.txt defines both for this file alone; the
// fallbacks keep a build by other means compiling.
#ifndef SHEFL_VERSION
#define SHEFL_VERSION "0.0.0"
#endif
#ifndef SHEFL_GIT_COMMIT
#define SHEFL_GIT_COMMIT "unknown"
#endif

namespace shefl {

std::string Version() { return SHEFL_VERSION; }

std::string GitCommit() { return SHEFL_GIT_COMMIT; }

std::string VersionLine(const std::string& program) {
  return program + " " + Version() + " (git " + GitCommit() + ")\n";
}

}  // namespace shefl
