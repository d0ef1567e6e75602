// A results folder that already holds a run: a new run must never write
// into it by accident (config.yaml replaced, rounds appended to another
// run's), and a service that restarts must continue its own run, not one
// of another config. `shefl-coordinator --config C --out DIR` refuses a DIR
// that holds a run; with --continue it resumes DIR when DIR's config is
// C's (with the same --set), and otherwise refuses naming what changed.
// Free functions; thread-compatible.
#ifndef SHEFL_SERVER_RUN_RUN_FOLDER_H_
#define SHEFL_SERVER_RUN_RUN_FOLDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/run/coordinator_options.h"

namespace shefl {

// Whether `dir` holds a run: a checkpoint, or a rounds.jsonl with a line.
bool HoldsRun(const std::string& dir);

// The keys whose values differ between two configs as ConfigToYaml writes
// them, "key: before -> after" in key order; out_dir is not compared (the
// same run may be reached by another path).
std::vector<std::string> ConfigChanges(const std::string& before_yaml,
                                       const std::string& after_yaml);

// For a start with --config (no --resume): OK to start afresh; OK with
// o->resume_dir set (and the --set cleared: they are in force already)
// when --continue finds the same config's run in the results folder; an
// error naming the folder otherwise.
absl::Status ChooseStart(CoordinatorOptions* o);

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_RUN_FOLDER_H_
