// `shefl run`: validates the config, starts one coordinator and N client
// daemons on this machine, prints a line per finished round, and tears the
// processes down on success, failure or Ctrl-C.
#ifndef SHEFL_CLI_RUN_COMMAND_H_
#define SHEFL_CLI_RUN_COMMAND_H_

#include <string>

#include "cli/launch_args.h"

namespace shefl {

// Runs the experiment; `bin_dir` holds shefl-coordinator and shefl-client.
// Returns the process exit status: 0 done, 1 failed, 130 interrupted.
int RunExperiment(const RunArgs& args, const std::string& bin_dir);

}  // namespace shefl

#endif  // SHEFL_CLI_RUN_COMMAND_H_
