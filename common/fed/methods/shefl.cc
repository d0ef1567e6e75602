// SHEFL (000, 001): HPCs train all M members (or capacity levels), each LPC
// one by the permutation matrix; top-k at rho = 0.1; workload-aware
// aggregation of the HPC and LPC means.
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

class ShEFL final : public Method {
 public:
  std::string name() const override { return "shefl"; }
  std::string summary() const override {
    return "heterogeneous ensembles: HPCs train all M members, LPCs one";
  }
  MethodTraits traits() const override {
    MethodTraits t;
    t.assignment = Assignment::kTiers;
    t.latin_when_divisible = true;
    t.capacity_levels = true;
    t.default_density = 0.1;
    return t;
  }
  void Resolve(ConfigResolution&) const override {}
};

}  // namespace

const Method& ShEFLMethod() {
  static const ShEFL kMethod;
  return kMethod;
}

}  // namespace shefl
