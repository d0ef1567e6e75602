// `shefl certs --out DIR --hosts a,b,c [--clients N] [--days D] [--force]`:
// a development PKI and token for TLS and mutual TLS (common/net/certs.h);
// with --kits also a start kit per machine (cli/start_kits.h).
#ifndef SHEFL_CLI_CERTS_COMMAND_H_
#define SHEFL_CLI_CERTS_COMMAND_H_

#include <string>
#include <vector>

namespace shefl {

std::string CertsUsage();
// `args` starts with "certs". Returns the exit status: 0 written, 1 failed,
// 2 usage error.
int CertsCommand(const std::vector<std::string>& args);

}  // namespace shefl

#endif  // SHEFL_CLI_CERTS_COMMAND_H_
