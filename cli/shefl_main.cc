// `shefl`: the launcher and tool. See launch_args.cc for the usage text.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli/certs_command.h"
#include "cli/config_command.h"
#include "cli/health_command.h"
#include "cli/launch_args.h"
#include "cli/ls_command.h"
#include "cli/privacy_command.h"
#include "cli/report.h"
#include "cli/report_outputs.h"
#include "cli/run_command.h"
#include "cli/status_command.h"
#include "cli/stop_command.h"
#include "common/core/version.h"

namespace {

// shefl-coordinator and shefl-client live next to this binary (build/bin,
// or an install's bin). SHEFL_BIN_DIR overrides it, for installs that keep
// them apart and for tests that substitute stand-ins.
std::string SiblingBinDir() {
  if (const char* env = std::getenv("SHEFL_BIN_DIR"); env && *env) return env;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string self(buf, static_cast<size_t>(n));
  size_t slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

// `--flag=value` as `--flag value`, for every command alike (the
// subcommands' parsers read the spaced form; shefl-coordinator and
// shefl-client take both, and so does this tool).
std::vector<std::string> SplitFlagValues(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    const bool flag = a.size() > 2 && a.compare(0, 2, "--") == 0 &&
                      eq != std::string::npos && eq > 2 &&
                      a.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-",
                                          2) == eq;
    if (!flag) {
      out.push_back(a);
      continue;
    }
    out.push_back(a.substr(0, eq));
    out.push_back(a.substr(eq + 1));
  }
  return out;
}

int Report(const shefl::CommandLine& cl) {
  std::vector<shefl::ReportRow> rows;
  std::vector<std::string> read, names;
  int status = 0;
  for (const std::string& dir : cl.report_dirs) {
    absl::StatusOr<shefl::ReportRow> row = shefl::ReadReportRow(dir);
    if (row.ok()) {
      rows.push_back(*row);
      read.push_back(dir);
      names.push_back(row->name + " (" + dir + ")");
    } else {
      std::cerr << "shefl report: " << row.status().message() << "\n";
      status = 1;
    }
  }
  if (rows.empty()) return status;
  std::cout << shefl::FormatReportTable(rows);
  if (!cl.report_plots.empty()) {
    if (auto st = shefl::WritePlots(read, names, cl.report_plots); !st.ok()) {
      std::cerr << "shefl report: " << st.message() << "\n";
      return 1;
    }
    std::cout << "plots in " << cl.report_plots << "\n";
  }
  if (!cl.report_markdown.empty()) {
    std::ofstream out(cl.report_markdown);
    out << shefl::FormatMarkdownTable(rows, read);
    if (!out) {
      std::cerr << "shefl report: cannot write " << cl.report_markdown << "\n";
      return 1;
    }
    std::cout << "table in " << cl.report_markdown << "\n";
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args =
      SplitFlagValues(std::vector<std::string>(argv + 1, argv + argc));
  if (!args.empty() && args[0] == "certs") return shefl::CertsCommand(args);
  if (!args.empty() && args[0] == "health") return shefl::HealthCommand(args);
  if (!args.empty() && args[0] == "config") return shefl::ConfigCommand(args);
  if (!args.empty() && args[0] == "ls") return shefl::LsCommand(args);
  if (!args.empty() && args[0] == "privacy") return shefl::PrivacyCommand(args);
  if (!args.empty() && args[0] == "status") return shefl::StatusCommand(args);
  if (!args.empty() && args[0] == "stop") return shefl::StopCommand(args);
  if (!args.empty() && args[0] == "--version") {
    std::cout << shefl::VersionLine("shefl");
    return 0;
  }
  absl::StatusOr<shefl::CommandLine> cl = shefl::ParseCommandLine(args);
  if (!cl.ok()) {
    // Usage of the subcommand the user was typing, else the overview.
    std::string usage = shefl::MainUsage();
    if (!args.empty() && args[0] == "run") usage = shefl::RunUsage();
    if (!args.empty() && args[0] == "report") usage = shefl::ReportUsage();
    std::cerr << "shefl: " << cl.status().message() << "\n\n" << usage;
    return 2;
  }
  switch (cl->command) {
    case shefl::CommandLine::Command::kHelp:
      std::cout << cl->help_text;
      return 0;
    case shefl::CommandLine::Command::kRun:
      return shefl::RunExperiment(cl->run, SiblingBinDir());
    case shefl::CommandLine::Command::kReport:
      return Report(*cl);
  }
  return 2;
}
