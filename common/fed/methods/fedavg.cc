// FedAvg (McMahan et al. 2017): one model, every client trains it, a
// uniform mean of dense deltas.
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class FedAvg final : public Method {
 public:
  std::string name() const override { return "fedavg"; }
  std::string summary() const override { return "FedAvg: one model"; }
  MethodTraits traits() const override { return MethodTraits{}; }
  void Resolve(ConfigResolution& r) const override { PinOneModel(r); }
};

}  // namespace

const Method& FedAvgMethod() {
  static const FedAvg kMethod;
  return kMethod;
}

}  // namespace shefl
