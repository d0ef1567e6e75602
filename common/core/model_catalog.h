// The model names both sides know, for the config loader to refuse an
// unknown `model.name` (or one train.stacking cannot take) at start
// without linking LibTorch. The builders
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

// True for the models a daemon can train as one cohort stack
// (common/learn_stacked/cohort_train.h: no BatchNorm, an architecture the
// stacked forward knows); models_test checks it against CohortSupports.
bool StacksInCohort(const std::string& name);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_MODEL_CATALOG_H_
