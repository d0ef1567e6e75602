// The frame every `shefl NAME` subcommand (certs, config, health, ls,
// status, stop) shares, written once so that they answer alike:
//   --help or -h among the arguments: the usage on stdout, exit 0;
//   an argument the command's parser refuses (an unknown flag, a flag
//   without its value, a missing or extra argument): "shefl NAME: <what>",
//   a blank line and the usage on stderr, exit 2, the usage-error status
//   each usage text documents.
// The command's own parser names the flag in <what>; its body runs on what
// the parser returns and gives the exit status.
//
//   int LsCommand(const std::vector<std::string>& args) {
//     return RunCommand(args, "ls", LsUsage(), Parse, List);
//   }
//
// Header-only; thread-compatible (it writes std::cout and std::cerr).
#ifndef SHEFL_CLI_COMMAND_PREAMBLE_H_
#define SHEFL_CLI_COMMAND_PREAMBLE_H_

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shefl {

// The exit status of a usage error, for every subcommand.
inline constexpr int kUsageError = 2;

// Whether args[1..] (args[0] is the command's name) asks for the usage.
inline bool WantsHelp(const std::vector<std::string>& args) {
  return args.size() > 1 &&
         std::any_of(args.begin() + 1, args.end(), [](const std::string& a) {
           return a == "--help" || a == "-h";
         });
}

// Prints "shefl NAME: <message>", a blank line and `usage` to stderr;
// returns kUsageError.
inline int UsageError(absl::string_view name, absl::string_view message,
                      absl::string_view usage) {
  std::cerr << "shefl " << name << ": " << message << "\n\n" << usage;
  return kUsageError;
}

// The value after the flag at args[i] ("--out DIR"), moving i onto it;
// InvalidArgument "<flag> needs a value" when the flag ends the line.
inline absl::StatusOr<std::string> NextValue(
    const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size())
    return absl::InvalidArgumentError(args[i] + " needs a value");
  return args[++i];
}

// Runs `shefl NAME`: help, then parse(args) (an absl::StatusOr of the
// command's arguments; its error is a usage error), then body(parsed),
// whose int is the exit status.
template <typename Parse, typename Body>
int RunCommand(const std::vector<std::string>& args, absl::string_view name,
               const std::string& usage, Parse&& parse, Body&& body) {
  if (WantsHelp(args)) {
    std::cout << usage;
    return 0;
  }
  auto parsed = parse(args);
  if (!parsed.ok()) return UsageError(name, parsed.status().message(), usage);
  return body(*parsed);
}

}  // namespace shefl

#endif  // SHEFL_CLI_COMMAND_PREAMBLE_H_
