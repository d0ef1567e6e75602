#include "common/fed/methods/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fed/methods/all_methods.h"

namespace shefl {
namespace {

// The registry: one line per method.
const std::vector<const Method*>& Methods() {
  static const std::vector<const Method*> kMethods = {
      &ShEFLMethod(),  &FedEnsembleMethod(), &FedAvgMethod(),
      &FedProxMethod(), &FensMethod(),        &HasaMethod(),
      &FedAvgMMethod(), &FedAdamMethod(),
  };
  return kMethods;
}

}  // namespace

absl::StatusOr<const Method*> FindMethod(const std::string& name) {
  for (const Method* m : Methods())
    if (m->name() == name) return m;
  return absl::NotFoundError(absl::StrCat(
      "'", name, "' is not one of: ", absl::StrJoin(MethodNames(), ", ")));
}

std::vector<std::string> MethodNames() {
  std::vector<std::string> names;
  for (const Method* m : Methods()) names.push_back(m->name());
  return names;
}

MethodTraits TraitsOf(const std::string& method) {
  auto m = FindMethod(method);
  return m.ok() ? (*m)->traits() : MethodTraits{};
}

void PinOneModel(ConfigResolution& r) {
  r.Pin("model.num_models", "1",
        absl::StrCat("method ", r.config().method, " trains one model"));
}

}  // namespace shefl
