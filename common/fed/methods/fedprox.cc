// FedProx (Li et al. 2020): FedAvg with the local objective
// loss + mu/2 ||w - w_global||^2, mu = 0.01 unless train.prox_mu says.
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class FedProx final : public Method {
 public:
  std::string name() const override { return "fedprox"; }
  std::string summary() const override {
    return "FedProx: FedAvg with a proximal term (train.prox_mu)";
  }
  MethodTraits traits() const override { return MethodTraits{}; }
  void Resolve(ConfigResolution& r) const override {
    PinOneModel(r);
    r.Preset("train.prox_mu", "0.01");
  }
};

}  // namespace

const Method& FedProxMethod() {
  static const FedProx kMethod;
  return kMethod;
}

}  // namespace shefl
