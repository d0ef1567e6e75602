// `shefl status RUN_DIR`: where a run stands, from another terminal: its
// state and phase (waiting for clients, training round N, finished,
// stopped, crashed), connected and missing clients, each daemon, the
// rounds done and an ETA. Live figures come from the coordinator's
// /metrics (its address from endpoints.json); without an answer there it
// says so and reports what the files hold.
#ifndef SHEFL_CLI_STATUS_COMMAND_H_
#define SHEFL_CLI_STATUS_COMMAND_H_

#include <map>
#include <string>
#include <vector>

#include "cli/run_state.h"

namespace shefl {

std::string StatusUsage();

// The report for `info`; `metrics` is the coordinator's /metrics parsed
// (empty: not reachable), `daemon_states` each daemon's
// "disconnected|idle|training", "not answering" or "gone" by name.
std::string FormatRunStatus(const RunInfo& info,
                            const std::map<std::string, double>& metrics,
                            const std::map<std::string, std::string>& daemon_states);

// `args` starts with "status". Exit status: 0 reported, 1 not a run
// folder, 2 usage error.
int StatusCommand(const std::vector<std::string>& args);

}  // namespace shefl

#endif  // SHEFL_CLI_STATUS_COMMAND_H_
