// RUN_DIR/launch.json: how `shefl run` launched a run (daemons, threads,
// device, capacities, plaintext or mutual TLS, restarts). `shefl run
// --resume RUN_DIR` takes each of them from there unless its own command
// line gives it, so a resumed run has the same daemons hosting the same
// clients under the same certificates: the coordinator's ownership of
// clients by identity (checkpoints/ownership.json) would refuse another
// packing under mutual TLS. (Error-feedback residuals are named by client
// in a folder the daemons share, so a plaintext or shared-token run may be
// resumed with another --daemons.)
// Free functions; thread-compatible.
#ifndef SHEFL_CLI_LAUNCH_RECORD_H_
#define SHEFL_CLI_LAUNCH_RECORD_H_

#include <string>

#include "absl/status/status.h"
#include "cli/launch_args.h"

namespace shefl {

std::string LaunchRecordPath(const std::string& run_dir);

// `a` as launched, with the daemons and threads actually used.
absl::Status SaveLaunch(const std::string& run_dir, const RunArgs& a,
                        int daemons, int threads);

// Fills the fields of `a` its command line left at their defaults from
// RUN_DIR/launch.json. OK without a file (a run from before it existed);
// an error naming the file when it cannot be read.
absl::Status RestoreLaunch(const std::string& run_dir, RunArgs* a);

}  // namespace shefl

#endif  // SHEFL_CLI_LAUNCH_RECORD_H_
