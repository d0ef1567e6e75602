// HASA-style allocation (003): every client trains a rotating r_i * M of
// the M models, r_i from its label histogram, reallocated every round
// (common/fed/hasa.h); aggregation by shard size.
#include "absl/strings/str_cat.h"
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class Hasa final : public Method {
 public:
  std::string name() const override { return "hasa"; }
  std::string summary() const override {
    return "HASA: heterogeneity-aware share of the M models per client";
  }
  MethodTraits traits() const override {
    MethodTraits t;
    t.assignment = Assignment::kHasa;
    t.needs_label_counts = true;
    return t;
  }
  void Resolve(ConfigResolution& r) const override {
    // 003: size-proportional client weights.
    r.Preset("aggregation.weight_by_samples", "true");
    const HasaConfig& h = r.config().hasa;
    const int64_t M = r.config().model.num_models;
    if (h.r_min > h.r_max)
      r.Refuse("hasa.r_min",
               absl::StrCat(h.r_min, " is above hasa.r_max (", h.r_max, ")"),
               {"hasa.r_max"});
    if (h.budget < h.r_min || h.budget > h.r_max)
      r.Refuse("hasa.budget",
               absl::StrCat(h.budget, " is outside [hasa.r_min, hasa.r_max]"
                            " = [", h.r_min, ", ", h.r_max, "]"),
               {"hasa.r_min", "hasa.r_max"});
    if (h.r_min * static_cast<double>(M) < 1 - 1e-9)
      r.Refuse("hasa.r_min",
               absl::StrCat("r_min * model.num_models = ", h.r_min * M,
                            " < 1: every client must train at least one of "
                            "the ", M, " models a round"),
               {"model.num_models"});
  }
};

}  // namespace

const Method& HasaMethod() {
  static const Hasa kMethod;
  return kMethod;
}

}  // namespace shefl
