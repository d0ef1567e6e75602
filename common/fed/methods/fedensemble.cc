// Fed-ensemble (004): M members, every client one by independent row
// shuffles of the permutation, uniform aggregation, dense uploads.
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class FedEnsemble final : public Method {
 public:
  std::string name() const override { return "fedensemble"; }
  std::string summary() const override {
    return "Fed-ensemble: every client trains one of M members";
  }
  MethodTraits traits() const override { return MethodTraits{}; }
  void Resolve(ConfigResolution&) const override {}
};

}  // namespace

const Method& FedEnsembleMethod() {
  static const FedEnsemble kMethod;
  return kMethod;
}

}  // namespace shefl
