// FedAvgM (Hsu et al. 2019): FedAvg with server momentum on the averaged
// delta, v = mu v + Delta, w += v (aggregation.server_momentum, 0.9).
// The server optimiser itself is common/fed/server_optimizer.h, which any
// method (SHEFL's members too) can use by aggregation.server_optimizer.
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class FedAvgM final : public Method {
 public:
  std::string name() const override { return "fedavgm"; }
  std::string summary() const override {
    return "FedAvgM: FedAvg with server momentum";
  }
  MethodTraits traits() const override { return MethodTraits{}; }
  void Resolve(ConfigResolution& r) const override {
    PinOneModel(r);
    r.Pin("aggregation.server_optimizer", "momentum",
          "method fedavgm is FedAvg with server momentum");
  }
};

}  // namespace

const Method& FedAvgMMethod() {
  static const FedAvgM kMethod;
  return kMethod;
}

}  // namespace shefl
