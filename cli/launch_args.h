// Command-line parsing for the `shefl` tool: `shefl run ...` and
// `shefl report ...`. Parsing is pure (no I/O) so tests can pin every error;
// an error names the flag or subcommand it is about.
#ifndef SHEFL_CLI_LAUNCH_ARGS_H_
#define SHEFL_CLI_LAUNCH_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// `shefl run CONFIG [--daemons N] [--out DIR] [--set key=value ...]
//  [--resume RUN_DIR] [--threads T] [--device D] [--capacity C[,C...]]`
struct RunArgs {
  std::string config;                  // empty only with --resume
  int daemons = 0;                     // 0: default (2, capped at clients)
  std::string out;                     // empty: config out_dir or default
  std::vector<std::string> overrides;  // "dotted.key=value", in order
  std::string resume;                  // RUN_DIR of a run to continue
  int threads = 0;                     // 0: max(1, nproc / daemons)
  int eval_threads = 0;                // the coordinator's; 0: nproc
  int eval_nice = 0;                   // the coordinator's --eval-nice
  std::string device;                  // empty: the daemon's default
  bool insecure = false;               // plaintext; default mutual TLS
  int max_restarts = 5;                // per daemon that dies; 0: none
  // --capacity: models a round each daemon's clients train at most (HPC
  // capacity levels, HASA's caps); one value for every daemon or one per
  // daemon; empty: the daemons declare none.
  std::vector<int> capacity;
  // --python-clients RANGE: these logical clients go to one Python client
  // (--python-script, run by --python) instead of the C++ daemons.
  std::string python_clients;
  std::string python_script;  // empty: python/examples/fmnist_client.py
  std::string python;         // empty: /usr/bin/python3
  // From the config (clients.slow_fraction, clients.slowdown): the first
  // `slow_daemons` daemons run with --slowdown `slowdown`.
  size_t slow_daemons = 0;
  double slowdown = 1;
};

struct CommandLine {
  enum class Command { kHelp, kRun, kReport };
  Command command = Command::kHelp;
  // The usage text asked for with --help (main, run or report usage).
  std::string help_text;
  RunArgs run;
  std::vector<std::string> report_dirs;
  std::string report_plots;     // --plots DIR: PNGs there
  std::string report_markdown;  // --markdown FILE: the Table 1 form
};

// Parses argv without the program name. Errors are InvalidArgument with a
// message that names the offending flag, value or subcommand.
absl::StatusOr<CommandLine> ParseCommandLine(
    const std::vector<std::string>& args);

std::string MainUsage();
std::string RunUsage();
std::string ReportUsage();

}  // namespace shefl

#endif  // SHEFL_CLI_LAUNCH_ARGS_H_
