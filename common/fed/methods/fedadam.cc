// FedAdam (Reddi et al. 2021): FedAvg whose averaged delta is the
// pseudo-gradient of a server Adam (beta1 = aggregation.server_momentum,
// beta2, tau = server_epsilon) with step aggregation.server_lr, 0.01
// unless set (common/fed/server_optimizer.h).
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class FedAdam final : public Method {
 public:
  std::string name() const override { return "fedadam"; }
  std::string summary() const override {
    return "FedAdam: FedAvg with a server Adam";
  }
  MethodTraits traits() const override { return MethodTraits{}; }
  void Resolve(ConfigResolution& r) const override {
    PinOneModel(r);
    r.Pin("aggregation.server_optimizer", "adam",
          "method fedadam is FedAvg with a server Adam");
    r.Preset("aggregation.server_lr", "0.01");
  }
};

}  // namespace

const Method& FedAdamMethod() {
  static const FedAdam kMethod;
  return kMethod;
}

}  // namespace shefl
