#include "cli/launch_args.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

using Command = CommandLine::Command;

// Walks the arguments of one subcommand, accepting both `--flag value` and
// `--flag=value`, so that the per-flag code only sees (flag, value).
class ArgCursor {
 public:
  explicit ArgCursor(const std::vector<std::string>& args, size_t start)
      : args_(args), i_(start) {}

  bool Done() const { return i_ >= args_.size(); }
  const std::string& Peek() const { return args_[i_]; }

  // Splits the current argument into flag name and, when given inline,
  // its value; advances past it.
  std::string TakeFlag() {
    const std::string& a = args_[i_++];
    size_t eq = a.find('=');
    if (absl::StartsWith(a, "--") && eq != std::string::npos) {
      inline_value_ = a.substr(eq + 1);
      has_inline_ = true;
      return a.substr(0, eq);
    }
    has_inline_ = false;
    return a;
  }

  std::string TakePositional() { return args_[i_++]; }

  absl::StatusOr<std::string> TakeValue(const std::string& flag) {
    if (has_inline_) {
      has_inline_ = false;
      return inline_value_;
    }
    if (Done()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag ", flag, " needs a value"));
    }
    return args_[i_++];
  }

 private:
  const std::vector<std::string>& args_;
  size_t i_;
  std::string inline_value_;
  bool has_inline_ = false;
};

absl::StatusOr<int> PositiveInt(const std::string& flag,
                                const std::string& value) {
  int n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flag ", flag, " wants a positive integer, got '", value, "'"));
  }
  return n;
}

// --capacity C or C0,C1,...: models a round, 0 (none declared) to 1024,
// as shefl-client's --capacity takes them.
absl::Status ParseCapacity(const std::string& value, std::vector<int>& out) {
  out.clear();
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 0 || n > 1024)
      return absl::InvalidArgumentError(absl::StrCat(
          "flag --capacity wants models a round (0 to 1024) for every daemon "
          "or one per daemon, comma-separated; got '", value, "'"));
    out.push_back(n);
  }
  return absl::OkStatus();
}

// Applies one `run` flag to `run`.
absl::Status RunFlag(const std::string& flag, ArgCursor& cur, RunArgs& run) {
  SHEFL_ASSIGN_OR_RETURN(auto value, cur.TakeValue(flag));
  if (flag == "--daemons" || flag == "--threads" || flag == "--eval-threads") {
    SHEFL_ASSIGN_OR_RETURN(auto n, PositiveInt(flag, value));
    (flag == "--daemons"   ? run.daemons
     : flag == "--threads" ? run.threads
                           : run.eval_threads) = n;
  } else if (flag == "--eval-nice") {
    if (!absl::SimpleAtoi(value, &run.eval_nice) || run.eval_nice < 0 ||
        run.eval_nice > 19)
      return absl::InvalidArgumentError(
          absl::StrCat("flag --eval-nice wants 0 to 19, got '", value, "'"));
  } else if (flag == "--max-restarts") {
    if (!absl::SimpleAtoi(value, &run.max_restarts) || run.max_restarts < 0 ||
        run.max_restarts > 1000)
      return absl::InvalidArgumentError(absl::StrCat(
          "flag --max-restarts wants 0 to 1000, got '", value, "'"));
  } else if (flag == "--set") {
    if (value.find('=') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flag --set wants key=value, got '", value, "'"));
    }
    run.overrides.push_back(value);
  } else if (flag == "--out") {
    run.out = value;
  } else if (flag == "--resume") {
    run.resume = value;
  } else if (flag == "--device") {
    run.device = value;
  } else if (flag == "--capacity") {
    return ParseCapacity(value, run.capacity);
  } else if (flag == "--python-clients") {
    run.python_clients = value;
  } else if (flag == "--python-script") {
    run.python_script = value;
  } else if (flag == "--python") {
    run.python = value;
  }
  if (value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag ", flag, " needs a non-empty value"));
  }
  return absl::OkStatus();
}

bool IsRunFlag(const std::string& flag) {
  for (const char* f : {"--daemons", "--out", "--set", "--resume",
                        "--threads", "--device", "--max-restarts",
                        "--eval-threads", "--eval-nice",
                        "--capacity", "--python-clients", "--python-script",
                        "--python"}) {
    if (flag == f) return true;
  }
  return false;
}

absl::StatusOr<CommandLine> ParseRun(const std::vector<std::string>& args) {
  CommandLine cl;
  cl.command = Command::kRun;
  ArgCursor cur(args, 1);
  while (!cur.Done()) {
    if (!absl::StartsWith(cur.Peek(), "-")) {
      if (!cl.run.config.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "run takes one CONFIG, got a second: '", cur.Peek(), "'"));
      }
      cl.run.config = cur.TakePositional();
      continue;
    }
    std::string flag = cur.TakeFlag();
    if (flag == "--help" || flag == "-h") {
      return CommandLine{Command::kHelp, RunUsage(), {}, {}};
    }
    if (flag == "--insecure") {
      cl.run.insecure = true;
      continue;
    }
    if (!IsRunFlag(flag)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag for run: ", flag));
    }
    SHEFL_RETURN_IF_ERROR(RunFlag(flag, cur, cl.run));
  }
  // With --resume the run folder's config.yaml stands in for CONFIG.
  if (cl.run.config.empty() && cl.run.resume.empty()) {
    return absl::InvalidArgumentError("run needs a CONFIG file");
  }
  if (!cl.run.resume.empty() && !cl.run.out.empty() &&
      cl.run.out != cl.run.resume) {
    return absl::InvalidArgumentError(
        "flags --out and --resume both name the results folder; give one");
  }
  return cl;
}

absl::StatusOr<CommandLine> ParseReport(const std::vector<std::string>& args) {
  CommandLine cl;
  cl.command = Command::kReport;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      return CommandLine{Command::kHelp, ReportUsage(), {}, {}};
    }
    if (args[i] == "--plots" || args[i] == "--markdown") {
      if (i + 1 >= args.size())
        return absl::InvalidArgumentError(absl::StrCat(args[i], " needs a value"));
      (args[i] == "--plots" ? cl.report_plots : cl.report_markdown) = args[i + 1];
      ++i;
      continue;
    }
    if (absl::StartsWith(args[i], "-")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag for report: ", args[i]));
    }
    cl.report_dirs.push_back(args[i]);
  }
  if (cl.report_dirs.empty()) {
    return absl::InvalidArgumentError("report needs at least one RUN_DIR");
  }
  return cl;
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(
    const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      args[0] == "help") {
    return CommandLine{Command::kHelp, MainUsage(), {}, {}};
  }
  if (args[0] == "run") return ParseRun(args);
  if (args[0] == "report") return ParseReport(args);
  if (absl::StartsWith(args[0], "-")) {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag: ", args[0]));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown subcommand: ", args[0]));
}

std::string MainUsage() {
  return "usage: shefl <command> [args]\n"
         "\n"
         "commands:\n"
         "  run CONFIG [flags]   start a coordinator and client daemons on\n"
         "                       this machine and follow the run\n"
         "  report RUN_DIR...    one table row per run (a run not finished:\n"
         "                       its rounds so far, marked as such)\n"
         "  ls [DIR]             the runs under DIR (default results/): state,\n"
         "                       rounds, best accuracy, start, wall time\n"
         "  status RUN_DIR       where a run stands: phase, clients, daemons, ETA\n"
         "  stop RUN_DIR         stop a run cleanly, resumable with\n"
         "                       `shefl run --resume RUN_DIR`\n"
         "  config CONFIG [--set k=v]  print the resolved config;\n"
         "                       --reference: every key\n"
         "  privacy CONFIG [--target EPS]  the epsilon a config's differential\n"
         "                       privacy reaches, without running it\n"
         "  certs --out DIR --hosts a,b  a development CA, server and client\n"
         "                       certificates and a token (TLS, mTLS)\n"
         "  health HOST:PORT     is the coordinator serving? (exit 0 if so)\n"
         "\n"
         "`shefl <command> --help` shows the flags of a command;\n"
         "`shefl --version` the version and the git commit of the build.\n";
}

std::string RunUsage() {
  return "usage: shefl run CONFIG [--daemons N] [--out DIR] "
         "[--set key=value ...]\n"
         "                 [--resume RUN_DIR] [--threads T] [--device D]\n"
         "                 [--eval-threads E] [--eval-nice D]\n"
         "                 [--insecure] [--max-restarts R] [--capacity C[,C...]]\n"
         "                 [--python-clients RANGE [--python-script FILE]\n"
         "                  [--python PYTHON]]\n"
         "\n"
         "  CONFIG            experiment YAML (optional with --resume: the\n"
         "                    run folder's config.yaml)\n"
         "  --daemons N       client daemons to start (default 1, at most\n"
         "                    the number of clients; clients are dealt to\n"
         "                    them in turn). A daemon trains as many models\n"
         "                    at once as it has cores, one thread each, so\n"
         "                    results do not depend on N or T\n"
         "  --out DIR         results folder (default: the config's out_dir,\n"
         "                    else results/<name>-<YYYYmmdd-HHMMSS>)\n"
         "  --set key=value   override one config key (repeatable), e.g.\n"
         "                    --set rounds=3 --set compression.density=0.02\n"
         "  --resume RUN_DIR  continue RUN_DIR from its last checkpoint\n"
         "  --threads T       cores per daemon (default max(1, nproc/N))\n"
         "  --eval-threads E  the coordinator evaluates on one thread beside\n"
         "                    the training, on E (default nproc) while it\n"
         "                    waits for the evaluation (the last round)\n"
         "  --eval-nice D     those threads D nice levels down (0-19, default 0)\n"
         "  --device D        daemon device: auto | cpu | cuda | cuda:N\n"
         "  --capacity C      each daemon's clients train at most C of the M\n"
         "                    models a round (HPC capacity levels, HASA's\n"
         "                    caps); C0,C1,... gives one per daemon\n"
         "  --python-clients RANGE  these clients (e.g. 0-1) join through one\n"
         "                    Python client (python/shefl_client) instead of\n"
         "                    the C++ daemons, with the same flags\n"
         "  --python-script FILE  the Python client program (default\n"
         "                    python/examples/fmnist_client.py)\n"
         "  --python PYTHON   the interpreter (default /usr/bin/python3)\n"
         "  --max-restarts R  restart a daemon that dies, up to R times\n"
         "                    (default 5; 0: never; the run goes on without\n"
         "                    a dead daemon and ends when none is left)\n"
         "  --insecure        plaintext gRPC, no token (default: mutual TLS\n"
         "                    and a token, made in RUN_DIR/certs/)\n"
         "\n"
         "Writes RUN_DIR/endpoints.json once the processes listen, logs to\n"
         "RUN_DIR/logs/, and prints one line per finished round.\n"
         "Exit status: 0 done, 1 failed, 2 usage error, 130 interrupted.\n";
}

std::string ReportUsage() {
  return "usage: shefl report RUN_DIR... [--plots DIR] [--markdown FILE]\n"
         "\n"
         "Prints one row per run folder from its summary.json and\n"
         "config.yaml: name, rounds, final and best accuracy, rounds to\n"
         "threshold, total MB up and down. A run that is not finished\n"
         "(running, stopped, crashed) is reported from its rounds.jsonl so\n"
         "far, with a note beneath the table that says so.\n"
         "  --plots DIR      accuracy_vs_round.png, accuracy_vs_bytes.png and\n"
         "                   bytes_per_round.png there (gnuplot), one line per run\n"
         "  --markdown FILE  a table per config name (runs of several seeds\n"
         "                   pooled): final accuracy mean +- std, rounds to\n"
         "                   threshold, total MB, and the folders read\n";
}

}  // namespace shefl
