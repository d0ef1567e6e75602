// The method registry: every method by its `method:` name. Lookups are
// reads of a constant table; thread-safe.
#ifndef SHEFL_COMMON_FED_METHODS_REGISTRY_H_
#define SHEFL_COMMON_FED_METHODS_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fed/methods/method.h"

namespace shefl {

// The method named `name`; NotFound lists the known names.
absl::StatusOr<const Method*> FindMethod(const std::string& name);

// Every registered name, in registry order.
std::vector<std::string> MethodNames();

// The traits of a method the config loader accepted (so known); the
// default traits for an unknown name.
MethodTraits TraitsOf(const std::string& method);

// True when the method samples, assigns and aggregates by tier (SHEFL:
// HPCs train all M models); the others give every client its models by
// their own rule and a plain mean, whatever its tier (clients.num_hpc).
inline bool MethodHasTiers(const std::string& method) {
  return TraitsOf(method).assignment == Assignment::kTiers;
}

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_METHODS_REGISTRY_H_
