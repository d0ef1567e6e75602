// `shefl privacy CONFIG [--set key=value ...] [--target EPSILON]`: what a
// config's differential privacy will spend, without running it: each
// sampled tier's rate, epsilon after the first round, a few rounds between
// and the last (the worst tier's, at the run's delta), the round
// privacy.target_epsilon stops it at, and with --target the least noise
// multiplier that keeps the whole run within EPSILON. Thread-compatible.
#ifndef SHEFL_CLI_PRIVACY_COMMAND_H_
#define SHEFL_CLI_PRIVACY_COMMAND_H_

#include <string>
#include <vector>

namespace shefl {

std::string PrivacyUsage();

// args[0] is "privacy". Exit status: 0, 2 on a usage or config error.
int PrivacyCommand(const std::vector<std::string>& args);

}  // namespace shefl

#endif  // SHEFL_CLI_PRIVACY_COMMAND_H_
