// A daemon that lies, for robustness experiments (shefl-client
// --adversary MODE; bench/robustness.sh and tests/robust_attacks_test.cc
// run it beside honest daemons). Honest daemons have none. Modes:
//   huge:   every upload is one coordinate of 1e38 (the rest 0);
//   flip:   the trained delta, sign-flipped and scaled x100;
//   noise:  Gaussian noise at 100x the trained delta's L2 norm;
//   shard:  each hosted client claims 2^32 samples;
//   labels: each hosted client claims all its samples in class 0;
//   stall:  takes every task and never answers (the round waits for its
//           deadline; clients.staller_strikes benches such clients);
//   garbage: secure aggregation: follows every stage, but adds uniform
//           random words to its masked input (the coordinator's honest
//           range marks such sums corrupt; common/secure/honest_range.h).
// Nothing here is secret: any peer holding a token or certificate can send
// the same with its own code; the coordinator's defences are
// aggregation.robust (common/fed/robust.h) and, for secure sums, the
// honest range and the blame book (server/state/party_blame.h).
// Thread-safe: const after Parse.
#ifndef SHEFL_CLIENT_ADVERSARY_H_
#define SHEFL_CLIENT_ADVERSARY_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

class Adversary {
 public:
  static absl::StatusOr<Adversary> Parse(const std::string& mode);
  static const char* Modes() {
    return "huge, flip, noise, shard, labels, stall, garbage";
  }

  const std::string& mode() const { return mode_; }
  bool Stalls() const { return mode_ == "stall"; }
  // Bends a trained flat delta (fp32, any device) in place.
  void TamperDelta(at::Tensor* delta) const;
  // Bends a secure party's masked input words in place.
  void TamperWords(std::vector<uint32_t>* words) const;
  // The shard size and label histogram reported for a client.
  uint64_t ClaimSamples(uint64_t real) const;
  std::vector<uint64_t> ClaimLabels(std::vector<uint64_t> real) const;

 private:
  explicit Adversary(std::string mode) : mode_(std::move(mode)) {}
  std::string mode_;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_ADVERSARY_H_
