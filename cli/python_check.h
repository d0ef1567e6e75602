// `shefl run --python-clients`: before anything starts, whether the Python
// interpreter can run the client at all (PyTorch, gRPC and protobuf for
// Python, and the client's generated gRPC modules). Without this check a
// missing package shows up as an ImportError in logs/python-0.log and five
// restarts.
#ifndef SHEFL_CLI_PYTHON_CHECK_H_
#define SHEFL_CLI_PYTHON_CHECK_H_

#include <string>

#include "absl/status/status.h"

namespace shefl {

// Runs `python` on a probe that imports what `script` (the client program)
// needs, with the package beside it (script/../) on the path, as the
// example does. FAILED_PRECONDITION naming the missing module and how to
// install it on Debian 12, or how to build the gRPC modules.
absl::Status CheckPythonClient(const std::string& python,
                               const std::string& script);

}  // namespace shefl

#endif  // SHEFL_CLI_PYTHON_CHECK_H_
