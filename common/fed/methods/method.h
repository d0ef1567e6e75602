// The interface every federated-learning method implements, and the
// traits the runtime reads from it. A method is one file in this folder
// and one line of registry.cc; `method:` in a config is looked up there
// (docs/EXTENDING.md walks a new one). The runtime never compares method
// names: it asks the method's traits. Methods are stateless singletons;
// thread-safe.
#ifndef SHEFL_COMMON_FED_METHODS_METHOD_H_
#define SHEFL_COMMON_FED_METHODS_METHOD_H_

#include <string>

#include "absl/status/status.h"
#include "common/fed/methods/config_resolution.h"

namespace shefl {

// How a method's rounds go.
enum class RoundShape {
  kIterative,  // rounds of train, upload, aggregate (the default)
  kOneShot,    // FENS: one round; the client models are the ensemble,
               // combined by an aggregator fitted on a proxy split
};

// Who trains which of the M models in a round.
enum class Assignment {
  kTiers,        // SHEFL: HPCs train all M (or capacity levels), each LPC
                 // one model by the permutation matrix
  kOnePerClient, // every client one model by the permutation (baselines)
  kHasa,         // HASA: each client a rotating r_i * M of the models,
                 // r_i reallocated every round from label histograms
};

struct MethodTraits {
  Assignment assignment = Assignment::kOnePerClient;
  RoundShape round_shape = RoundShape::kIterative;
  // schedule.assignment auto: latin when the LPC rows divide by M
  // (SHEFL's paper assumes it), else shuffle (Fed-ensemble's Algorithm 1).
  bool latin_when_divisible = false;
  // clients.hpc_capacity applies (SHEFL's HPC capacity levels).
  bool capacity_levels = false;
  // The daemon sends each client's label histogram with its shard size.
  bool needs_label_counts = false;
  // compression.density when unset: 1 is dense (the baselines' papers).
  double default_density = 1.0;
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;
  // One line for `shefl methods` and errors.
  virtual std::string summary() const = 0;
  virtual MethodTraits traits() const = 0;
  // The method's presets and refusals: fills the keys the user left unset
  // (r.Preset) and pins the keys the method cannot do without (r.Pin); a
  // pinned key set otherwise is reported with every other conflict at once.
  virtual void Resolve(ConfigResolution& r) const = 0;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_METHODS_METHOD_H_
