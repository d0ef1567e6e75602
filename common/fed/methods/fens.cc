// FENS (002): one-shot federated ensembles. One round in which every
// client trains the one initial model and uploads it dense; the N client
// models are the ensemble, combined by an aggregator fitted on a proxy
// split the coordinator holds (docs/FENS.md).
#include "absl/strings/str_cat.h"
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class Fens final : public Method {
 public:
  std::string name() const override { return "fens"; }
  std::string summary() const override {
    return "FENS: one-shot ensemble of the client models";
  }
  MethodTraits traits() const override {
    MethodTraits t;
    t.round_shape = RoundShape::kOneShot;
    return t;
  }
  void Resolve(ConfigResolution& r) const override {
    r.Pin("rounds", "1", "method fens is one-shot: rounds must be 1");
    r.Pin("model.num_models", "1",
          "method fens: every client trains the one initial model (the "
          "ensemble is the N client models)");
    const ExperimentConfig& c = r.config();
    r.Preset("clients.per_round_hpc", "0");
    r.Pin("clients.per_round_lpc",
          absl::StrCat(c.clients.num_clients - c.clients.per_round_hpc),
          absl::StrCat("method fens: every client takes part in its one "
                       "round; per_round_hpc + per_round_lpc must be "
                       "clients.num_clients (",
                       c.clients.num_clients, ")"));
    if (c.clients.over_selection > 0)
      r.Refuse("clients.over_selection",
               "method fens: every client takes part; no over-selection",
               {"clients.over_select", "method"});
    // FENS combines its members with the fitted aggregator, so there are
    // no member weights to personalise; eval.client_holdout scores the
    // aggregated ensemble on each client's held-out split.
    if (c.eval.gamma > 0)
      r.Refuse("eval.gamma",
               "method fens combines its members with fens.aggregator; "
               "personalised member weights do not apply",
               {"method"});
    if (c.partition.scheme == "own")
      r.Refuse("partition.scheme",
               "method fens holds back a proxy split of the training set, "
               "which 'own' data cannot give",
               {"method"});
  }
};

}  // namespace

const Method& FensMethod() {
  static const Fens kMethod;
  return kMethod;
}

}  // namespace shefl
