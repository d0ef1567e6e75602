#include "common/core/model_catalog.h"

#include <algorithm>

namespace shefl {

const std::vector<std::string>& ModelCatalog() {
  static const std::vector<std::string> kNames = {"cnn", "mlp", "resnet18",
                                                  "resnet34", "text"};
  return kNames;
}

bool IsKnownModel(const std::string& name) {
  const auto& names = ModelCatalog();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool StacksInCohort(const std::string& name) {
  return name == "cnn" || name == "mlp";
}

}  // namespace shefl
