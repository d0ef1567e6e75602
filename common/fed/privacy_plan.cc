#include "common/fed/privacy_plan.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/fed/methods/registry.h"

namespace shefl {

std::vector<SampledTier> PrivacyTiers(const ExperimentConfig& c) {
  const ClientsConfig& cl = c.clients;
  const double extra = 1 + cl.over_selection;
  auto tier = [&](const char* name, int64_t n, int64_t cohort) {
    const auto drawn = std::min<int64_t>(
        n, static_cast<int64_t>(std::ceil(static_cast<double>(cohort) * extra)));
    return SampledTier{name, n, drawn,
                       n > 0 ? static_cast<double>(drawn) / n : 0.0};
  };
  std::vector<SampledTier> out;
  if (!MethodHasTiers(c.method)) {
    out.push_back(tier("all", cl.num_clients, cl.per_round_hpc + cl.per_round_lpc));
    return out;
  }
  if (cl.num_hpc > 0) out.push_back(tier("hpc", cl.num_hpc, cl.per_round_hpc));
  if (cl.num_clients > cl.num_hpc)
    out.push_back(tier("lpc", cl.num_clients - cl.num_hpc, cl.per_round_lpc));
  return out;
}

double PrivacyDelta(const ExperimentConfig& c) {
  if (c.privacy.delta > 0) return c.privacy.delta;
  return std::pow(static_cast<double>(std::max<int64_t>(c.clients.num_clients, 2)),
                  -1.1);
}

double ClipCountNoise(const ExperimentConfig& c) {
  if (c.privacy.count_noise > 0) return c.privacy.count_noise;
  return static_cast<double>(c.clients.per_round_hpc + c.clients.per_round_lpc) /
         20.0;
}

double UpdateNoiseMultiplier(const ExperimentConfig& c) {
  const double z = c.privacy.noise_multiplier;
  if (!c.privacy.adaptive_clip) return z;
  const double rest = 1 / (z * z) - 1 / std::pow(2 * ClipCountNoise(c), 2);
  return rest > 0 ? 1 / std::sqrt(rest) : INFINITY;
}

namespace {

// What would publish an un-noised function of one client's data, or let
// one client's update change another's weight or clip.
void RefuseReleases(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  const char* one = "privacy.mode central releases only the noised sums; ";
  if (TraitsOf(c.method).round_shape == RoundShape::kOneShot)
    r.Refuse("privacy.mode", absl::StrCat(one, "method ", c.method,
                                          " publishes every client's model"),
             {"method"});
  if (c.method == "hasa")
    r.Refuse("privacy.mode", absl::StrCat(one, "hasa allocates capacities from "
                                          "each client's reported scores"),
             {"method"});
  if (c.eval.client_holdout > 0)
    r.Refuse("eval.client_holdout",
             absl::StrCat(one, "the client-level figures are each client's own "
                          "accuracy; set it to 0"),
             {"privacy.mode"});
  if (c.eval.gamma > 0)
    r.Refuse("eval.gamma",
             absl::StrCat(one, "the personalised weights come from each "
                          "client's own loss; set it to 0"),
             {"privacy.mode"});
  if (c.aggregation.secure != "off")
    r.Refuse("aggregation.secure",
             "privacy.mode central noises the sums the coordinator sees in the "
             "clear; set aggregation.secure to off",
             {"privacy.mode"});
}

// The sum's sensitivity is S times a coefficient fixed before the round.
void CheckSum(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  r.Pin("aggregation.robust", "false",
        "privacy.mode central: the median-based bounds let one client's update "
        "change another's clip; privacy.clip bounds every client instead");
  if (c.aggregation.rule != "uniform" && c.aggregation.rule != "workload_aware")
    r.Refuse("aggregation.rule",
             absl::StrCat("privacy.mode central divides by the planned counts; ",
                          c.aggregation.rule, " divides by the counts received "
                          "(use uniform or workload_aware)"),
             {"privacy.mode"});
  if (c.aggregation.weight_by_samples)
    r.Refuse("aggregation.weight_by_samples",
             "privacy.mode central weighs every client alike (a claimed sample "
             "count has no bound); set it to false",
             {"privacy.mode"});
  if (c.clients.over_selection > 0)
    r.Refuse("clients.over_selection",
             "privacy.mode central divides by the planned counts, and "
             "over-selection drops the late; set it to 0",
             {"privacy.mode"});
  if (c.aggregation.reduction != "client_order")
    r.Refuse("aggregation.reduction",
             "privacy.mode central clips each client's updates together at the "
             "round's close; leave it at client_order",
             {"privacy.mode"});
}

}  // namespace

void CheckPrivacy(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  if (c.privacy.mode == "off") return;
  RefuseReleases(r);
  CheckSum(r);
  if (c.privacy.adaptive_clip && !std::isfinite(UpdateNoiseMultiplier(c)))
    r.Refuse("privacy.count_noise",
             absl::StrCat("adaptive clipping needs 2 sigma_b > z; sigma_b is ",
                          ClipCountNoise(c), " and z is ",
                          c.privacy.noise_multiplier,
                          " (raise privacy.count_noise)"),
             {"privacy.noise_multiplier"});
}

}  // namespace shefl
