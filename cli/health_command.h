// `shefl health HOST:PORT [TLS flags] [--service S] [--timeout-s S]`: asks
// the coordinator's standard gRPC health service (grpc.health.v1) whether
// it is serving, for compose healthchecks, probes and scripts.
#ifndef SHEFL_CLI_HEALTH_COMMAND_H_
#define SHEFL_CLI_HEALTH_COMMAND_H_

#include <string>
#include <vector>

namespace shefl {

std::string HealthUsage();
// `args` starts with "health". Returns the exit status: 0 SERVING, 1 any
// other answer or no answer, 2 usage error.
int HealthCommand(const std::vector<std::string>& args);

}  // namespace shefl

#endif  // SHEFL_CLI_HEALTH_COMMAND_H_
