// The "--flag value" command lines of shefl-coordinator and shefl-client,
// and their stop-on-SIGTERM/SIGINT wiring.
#ifndef SHEFL_COMMON_CORE_FLAGS_H_
#define SHEFL_COMMON_CORE_FLAGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

// One setter per flag name ("--listen"); a setter refuses a bad value with
// a message that names the flag.
using FlagSetters =
    std::map<std::string, std::function<absl::Status(const std::string&)>>;

// Runs a binary's main: parses argv with `setters` (--help prints `usage`
// and exits 0; --version prints VersionLine(program) and exits 0; an
// unknown flag or a missing value exits 2 naming it), then calls `run`,
// whose error is printed as "<program>: <message>" with exit code 1
// (kExitCannotStart when the error is marked CannotStart).
// SIGTERM and SIGINT call `stop` (which must be signal-safe).
// `switches` are flags without a value ("--insecure"): present sets true.
using FlagSwitches = std::map<std::string, bool*>;
int RunMain(int argc, char** argv, const std::string& program,
            const std::string& usage, const FlagSetters& setters,
            const std::function<absl::Status()>& run,
            void (*stop)(int signal), const FlagSwitches& switches = {});

// The exit status of a start-up error that no restart can change (a bad
// --device, an unreadable certificate): supervisors (`shefl run`, the
// lab's systemd unit) leave such a process stopped instead of retrying.
constexpr int kExitCannotStart = 3;
// `st` marked as such an error: RunMain then exits with kExitCannotStart.
absl::Status CannotStart(absl::Status st);

// Setter helpers.
std::function<absl::Status(const std::string&)> SetString(std::string* out);
std::function<absl::Status(const std::string&)> AppendString(
    std::vector<std::string>* out);
std::function<absl::Status(const std::string&)> SetInt(const std::string& flag,
                                                       int* out);
// Logical client ids as a flag gives them: "0-24", "3", "0-4,10-14", and
// with a step "0-99990/10" (0, 10, ..., 99990: how `shefl run` deals many
// clients out in turn), in ascending order without repeats; an error
// names `flag`.
absl::StatusOr<std::vector<int64_t>> ParseIdRanges(const std::string& flag,
                                                   const std::string& spec);

// A duration in seconds: finite, >= 0 and at most a day.
std::function<absl::Status(const std::string&)> SetSeconds(
    const std::string& flag, double* out);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_FLAGS_H_
