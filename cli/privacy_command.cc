#include "cli/privacy_command.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_preamble.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"
#include "common/fed/privacy_plan.h"
#include "common/privacy/round_rdp.h"

namespace shefl {
namespace {

struct PrivacyArgs {
  std::string config;
  std::vector<std::string> overrides;
  double target = 0;  // --target: > 0 asks for the noise multiplier
};

absl::StatusOr<PrivacyArgs> Parse(const std::vector<std::string>& args) {
  PrivacyArgs a;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--set") {
      SHEFL_ASSIGN_OR_RETURN(a.overrides.emplace_back(), NextValue(args, i));
    } else if (flag == "--target") {
      SHEFL_ASSIGN_OR_RETURN(const std::string v, NextValue(args, i));
      if (!absl::SimpleAtod(v, &a.target) || !(a.target > 0))
        return absl::InvalidArgumentError(
            absl::StrCat("--target needs an epsilon above 0, got '", v, "'"));
    } else if (absl::StartsWith(flag, "-")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag for privacy: ", flag));
    } else if (a.config.empty()) {
      a.config = flag;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("privacy takes one CONFIG, got another: ", flag));
    }
  }
  if (a.config.empty())
    return absl::InvalidArgumentError("privacy needs a CONFIG file");
  return a;
}

// The worst tier's epsilon after `rounds` rounds at multiplier z, under
// the config's privacy.mode.
PrivacySpent WorstAfter(const ExperimentConfig& c,
                        const std::vector<SampledTier>& tiers, double z,
                        int64_t rounds, double delta) {
  PrivacySpent worst{0, 0};
  for (const SampledTier& t : tiers) {
    if (t.q <= 0) continue;
    const PrivacySpent s = RoundSpent(c, z, t.q, rounds, delta);
    if (s.epsilon > worst.epsilon) worst = s;
  }
  return worst;
}

// The rounds worth a line: 1, then about ten steps to the last.
std::vector<int64_t> Milestones(int64_t rounds) {
  std::vector<int64_t> out = {1};
  const int64_t step = std::max<int64_t>(1, rounds / 10);
  for (int64_t r = step; r < rounds; r += step)
    if (r > 1) out.push_back(r);
  if (rounds > 1) out.push_back(rounds);
  return out;
}

void PrintTarget(const ExperimentConfig& c, const std::vector<SampledTier>& tiers,
                 double target, double delta) {
  double z = 0;
  for (const SampledTier& t : tiers) {
    if (t.q <= 0) continue;
    auto need = RoundNoiseForTarget(c, t.q, c.rounds, delta, target);
    if (!need.ok()) {
      std::cout << "--target " << target << ": " << need.status().message() << "\n";
      return;
    }
    z = std::max(z, *need);
  }
  std::cout << absl::StrFormat(
      "--target %g: privacy.noise_multiplier %.4f keeps all %d rounds within "
      "epsilon %g (the worst tier)\n",
      target, z, c.rounds, target);
}

int Show(const PrivacyArgs& a) {
  auto config = LoadConfig(a.config, a.overrides);
  if (!config.ok()) {
    std::cerr << "shefl privacy: " << config.status().message() << "\n";
    return kUsageError;
  }
  const ExperimentConfig& c = *config;
  const double delta = PrivacyDelta(c);
  const double z = c.privacy.noise_multiplier;
  const std::vector<SampledTier> tiers = PrivacyTiers(c);
  if (c.privacy.mode == "off")
    std::cout << "privacy.mode is off: these are what privacy.mode central "
                 "would spend\n";
  if (c.privacy.mode == "distributed")
    std::cout << absl::StrFormat(
        "privacy.mode distributed: Skellam noise on the secure sums, "
        "subsampled by Zhu and Wang's bound at integer orders (B = S 2^f = "
        "%.6g)\n",
        DistributedUnit(c));
  std::cout << absl::StrFormat(
      "z = %g, delta = %.3g%s, Poisson sampling assumed per tier:\n", z, delta,
      c.privacy.delta > 0 ? "" : absl::StrCat(" (1/N^1.1, N = ", c.clients.num_clients, ")"));
  for (const SampledTier& t : tiers)
    std::cout << absl::StrFormat("  %-4s %d clients, %d a round, q = %.6g\n",
                                 t.name, t.clients, t.cohort, t.q);
  int64_t stop = 0;
  for (int64_t r = 1; r <= c.rounds && c.privacy.target_epsilon > 0; ++r)
    if (WorstAfter(c, tiers, z, r, delta).epsilon > c.privacy.target_epsilon) {
      stop = r;
      break;
    }
  for (int64_t r : Milestones(c.rounds)) {
    const PrivacySpent s = WorstAfter(c, tiers, z, r, delta);
    std::cout << absl::StrFormat("  after round %d: epsilon %.4f (order %g)\n",
                                 r, s.epsilon, s.order);
  }
  if (stop > 0)
    std::cout << absl::StrFormat(
        "privacy.target_epsilon %g stops the run after round %d of %d\n",
        c.privacy.target_epsilon, stop - 1, c.rounds);
  if (a.target > 0) PrintTarget(c, tiers, a.target, delta);
  return 0;
}

}  // namespace

std::string PrivacyUsage() {
  return "usage: shefl privacy CONFIG [--set key=value ...] [--target EPSILON]\n"
         "  prints the epsilon the config's differential privacy reaches\n"
         "  (privacy.*, the RDP accountant at the run's delta), round by\n"
         "  round, without running it\n"
         "  --set key=value   override one config key (repeatable)\n"
         "  --target EPSILON  also print the least privacy.noise_multiplier\n"
         "                    that keeps the whole run within EPSILON\n"
         "exit status: 0, 2 on a usage or config error\n";
}

int PrivacyCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "privacy", PrivacyUsage(), Parse, Show);
}

}  // namespace shefl
