// `shefl ls [DIR] [--json]`: one line per run folder under DIR (default
// results/, where `shefl run` makes them): its name, method, state
// (cli/run_state.h), rounds done of planned, best accuracy so far, when it
// started and its wall time; --json gives the same as a JSON array.
#ifndef SHEFL_CLI_LS_COMMAND_H_
#define SHEFL_CLI_LS_COMMAND_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_state.h"

namespace shefl {

std::string LsUsage();

// The run folders at DIR: DIR itself when it is one, else those below it
// (three levels at most, not inside a run folder), sorted by path.
std::vector<std::string> FindRunFolders(const std::string& dir);

// A table with aligned columns and a header line; each run is named by its
// path below `under` (the DIR listed).
std::string FormatRunsTable(const std::vector<RunInfo>& runs,
                            const std::string& under);
// One object per run: dir, name, method, state, resumable, rounds_done,
// rounds_planned, best_accuracy (null before an evaluation), started
// (Unix seconds or null), wall_seconds, coordinator_pid (null when none).
nlohmann::json RunsToJson(const std::vector<RunInfo>& runs);

// `args` starts with "ls". Exit status: 0 listed (none included), 1 DIR
// is not a folder, 2 usage error.
int LsCommand(const std::vector<std::string>& args);

}  // namespace shefl

#endif  // SHEFL_CLI_LS_COMMAND_H_
