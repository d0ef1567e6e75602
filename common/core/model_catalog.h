// The model names both sides know, for the config loader to refuse an
// unknown `model.name` at start without linking LibTorch. The builders
// live in common/learn/models.cc; model_registry_test checks that
// the two lists agree. Constant data; thread-safe.
#ifndef SHEFL_COMMON_CORE_MODEL_CATALOG_H_
#define SHEFL_COMMON_CORE_MODEL_CATALOG_H_

#include <string>
#include <vector>

namespace shefl {

// Every model name, in registry order.
const std::vector<std::string>& ModelCatalog();

// True when `name` is in the catalogue.
bool IsKnownModel(const std::string& name);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_MODEL_CATALOG_H_
