#include "common/fed/privacy_plan.h"

#include <algorithm>
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

int64_t PlannedThreshold(const ExperimentConfig& c, int64_t n) {
  return c.secure.threshold > 0 ? c.secure.threshold : 2 * n / 3 + 1;
}

double PartyNoiseVariance(const ExperimentConfig& c, uint64_t k, int64_t t) {
  const double d2 =
      std::ldexp(c.privacy.clip, static_cast<int>(c.secure.scale_bits)) +
      std::sqrt(static_cast<double>(c.model.num_models) * static_cast<double>(k));
  const double sd = c.privacy.noise_multiplier * d2;
  return sd * sd / static_cast<double>(std::max<int64_t>(t, 1));
}

namespace {

// Whether the cohort's words (each client at most min(c, S) 2^f a
// coordinate) and 10 standard deviations of the survivors' noise fit a
// signed 32-bit word. The noise is taken at D2 = 1.01 S 2^f (the sqrt(M K)
// of rounding is checked again when a session is planned) and n / t at
// its most: under 1.5 with the default t, the cohort over t otherwise.
bool FitsWords(const ExperimentConfig& c, int64_t bits) {
  int64_t cohort = 0;
  for (const SampledTier& t : PrivacyTiers(c)) cohort += t.cohort;
  const double ratio = c.secure.threshold > 0
                           ? static_cast<double>(cohort) / c.secure.threshold
                           : 1.5;
  const int f = static_cast<int>(bits);
  const double words =
      static_cast<double>(cohort) *
          (std::ceil(std::ldexp(std::min(c.secure.clip, c.privacy.clip), f)) + 1) +
      10 * c.privacy.noise_multiplier * 1.01 * std::ldexp(c.privacy.clip, f) *
          std::sqrt(std::max(ratio, 1.0));
  return words < 0x1.0p31;
}

int64_t LargestFittingBits(const ExperimentConfig& c) {
  int64_t bits = c.secure.scale_bits;
  while (bits > 0 && !FitsWords(c, bits)) --bits;
  return bits;
}

// What would publish an un-noised function of one client's data, or let
// one client's update change another's weight or clip.
void RefuseReleases(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  const std::string one =
      absl::StrCat("privacy.mode ", c.privacy.mode, " releases only the noised sums; ");
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

// What could send a function of one client's data around the noise, and
// whether the noised sum fits its 32-bit words.
void CheckDistributed(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  const char* why = "privacy.mode distributed: ";
  if (c.aggregation.secure != "common_support")
    r.Refuse("aggregation.secure",
             absl::StrCat(why, "the parties add the noise inside the masked "
                          "sums; set aggregation.secure to common_support"),
             {"privacy.mode"});
  if (c.secure.vote)
    r.Refuse("secure.vote",
             absl::StrCat(why, "the vote counts each client's own top-k "
                          "without noise, and the support must not depend on "
                          "private data; set it to false"),
             {"privacy.mode"});
  if (c.secure.support == "oracle")
    r.Refuse("secure.support",
             absl::StrCat(why, "the oracle support is the top of the "
                          "clients' sum; use accumulator or layout"),
             {"privacy.mode"});
  if (c.secure.diagnose)
    r.Refuse("secure.diagnose",
             absl::StrCat(why, "the diagnosis sends each party's dense sum; "
                          "set it to false"),
             {"privacy.mode"});
  if (c.secure.word_bits != 32)
    r.Refuse("secure.word_bits",
             absl::StrCat(why, "the noise needs 32-bit words"), {"privacy.mode"});
  if (c.privacy.adaptive_clip)
    r.Refuse("privacy.adaptive_clip",
             absl::StrCat(why, "the count of clipped clients would have to be "
                          "summed inside the sessions, which is not built; "
                          "set it to false"),
             {"privacy.mode"});
  if (!FitsWords(c, c.secure.scale_bits))
    r.Refuse("secure.scale_bits",
             absl::StrCat(why, "with ", c.secure.scale_bits, " bits a noised "
                          "sum of the cohort may pass 2^31; the most that "
                          "fits is ", LargestFittingBits(c)),
             {"privacy.noise_multiplier", "privacy.clip", "secure.clip"});
}

}  // namespace

void CheckPrivacy(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  if (c.privacy.mode == "off") return;
  RefuseReleases(r);
  if (c.privacy.mode == "distributed") return CheckDistributed(r);
  if (c.aggregation.secure != "off")
    r.Refuse("aggregation.secure",
             "privacy.mode central noises the sums the coordinator sees in the "
             "clear; set aggregation.secure to off (privacy.mode distributed "
             "noises the secure sums)",
             {"privacy.mode"});
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
