// The two ends of a secure round's arithmetic around the masks
// (docs/DESIGN.md, "Secure aggregation"):
//   - a party (a daemon) turns each hosted client's update for a model into
//     fixed-point words on the common support C_t and adds them up: its
//     input q before masking. What a client did not send stays in its
//     residual (error feedback): everything outside C_t, and on C_t what
//     clipping and rounding took off, in the client's own units;
//   - the coordinator turns the unmasked sum back into the model's update
//     on C_t: the sum read as fixed point, divided by the weight mass of
//     the parties that survived.
// Without masks the same two steps give the same floats bit for bit
// (masks cancel exactly mod 2^32), whatever the packing of clients into
// parties and the order of arrival: each client's rounding draws from its
// own generator.
// Thread-safe: free functions; each call's generator is its own.
#ifndef SHEFL_COMMON_SECURE_SECURE_INPUT_H_
#define SHEFL_COMMON_SECURE_SECURE_INPUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/core/tensor_grid.h"
#include "common/secure/secret.h"

namespace shefl {

// What every party of a (round, model) agrees on.
struct SecureEncoding {
  std::vector<uint32_t> support;  // C_t, ascending coordinates
  double clip = 0;                // c: each value is clipped to [-c, c]
  int scale_bits = 24;            // f
  uint64_t seed = 0;              // the run's seed
  int64_t round = 0;
  uint32_t model = 0;
  // 16 or 32 (secure.word_bits): the K values travel mod 2^word_bits,
  // and the coordinator reads their sum as a signed word of that width.
  int word_bits = 32;
  // The vote's grids (common/secure/vote_counts.h); empty: no vote. Its
  // counts follow the K value words: the input is K + V words.
  std::vector<TensorGrid> vote;
  // clear_support with secure.diagnose: the input carries the party's
  // dense sum too (common/secure/support_diagnosis.h).
  bool diagnose = false;
  // privacy.mode distributed (common/secure/party_noise.h): the variance
  // of the Skellam noise each party adds to each of its K value words
  // (0: none), and the seed its noise key derives from (0: a fresh key).
  double noise_mu = 0;
  uint64_t noise_seed = 0;
  // K + V: the words of every party's input.
  uint64_t words() const { return support.size() + MarginalWords(vote); }
};

// Adds client `client`'s contribution to the party's input `q` (K words,
// empty before the first; a secret until masked, so it is a SecretWords,
// as are the client's words on their way into it):
// round(weight * clip(x) * 2^f) on C_t,
// x = delta + residual. `residual` (d floats, the client's error-feedback
// memory; empty means zeros) becomes x minus what was sent, so nothing
// leaves the client's books. `weight` is the public weight the
// coordinator gave the client's task, in (0, 1]. With a vote, the
// client's own top `own_k` positions of x are counted into the words after
// the K values. With `l2_clip` > 0 (privacy.mode distributed) the K values
// of x on C_t are first scaled to L2 norm at most l2_clip, so that what
// one client sends is bounded whatever its data; what the scaling took
// off stays in the residual with the rest.
absl::Status AddClientInput(absl::Span<const float> delta, double weight,
                            uint32_t client, const SecureEncoding& encoding,
                            std::vector<float>* residual, SecretWords* q,
                            uint64_t own_k = 0, double l2_clip = 0);

// The unmasked sum's K values as the signed words of encoding.word_bits
// bits they are (a 16-bit value word sign-extended), in place; the
// vote's counts after them stay as they are.
void WidenValueWords(const SecureEncoding& encoding, std::vector<uint32_t>* sum);

// The model's update on C_t from the unmasked sum of the survivors' inputs
// (K + V words: the vote's are not read here) and their weight mass
// (values in support order).
absl::StatusOr<std::vector<float>> SecureUpdate(absl::Span<const uint32_t> sum,
                                                double weight_mass,
                                                const SecureEncoding& encoding);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SECURE_INPUT_H_
