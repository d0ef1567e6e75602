// Distributed differential privacy's noise (privacy.mode distributed,
// docs/PRIVACY.md): before masking, each party adds Skellam noise of
// variance mu, Poisson(mu/2) - Poisson(mu/2), to each of its K value words,
// so that the unmasked sum of any t survivors carries at least t mu and the
// coordinator never sees a sum without it. The noise must be exactly the
// same from a C++ party and a Python one
// (python/shefl_client/secure/party_noise.py): every draw is made from a
// uniform stream with IEEE double arithmetic only (+ - * /, sqrt, floor,
// log, log1p, exp), in one order, never a standard-library distribution.
//  - The uniforms: the AES-256-CTR keystream under the party's noise key
//    from the all-zero counter block, 8 bytes at a time read little-endian,
//    their top 53 bits times 2^-53: in [0, 1).
//  - Poisson(lambda): lambda < 10 by multiplying uniforms (Knuth); else
//    Hoermann's transformed rejection with squeeze (PTRS, 1993), whose
//    acceptance test uses log p(k) from Stirling's series written around
//    lambda, (k - lambda) - k log1p((k - lambda) / lambda) - ..., so that
//    it keeps its precision at the lambda of 1e14 a run uses.
//  - The key: fresh from the operating system (what a private run uses),
//    or SHA-256 of a label, the seed, the round, the model and the party
//    for a run that must repeat (the seed's holder knows the noise).
// Thread-safe: a UniformStream is one caller's; the functions keep no state.
#ifndef SHEFL_COMMON_SECURE_PARTY_NOISE_H_
#define SHEFL_COMMON_SECURE_PARTY_NOISE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"
#include "common/secure/secure_input.h"

namespace shefl {

// Uniform doubles in [0, 1) from the AES-256-CTR keystream under a key,
// made 4,096 at a time.
class UniformStream {
 public:
  explicit UniformStream(const Key32& key) : key_(key) {}
  ~UniformStream();
  UniformStream(const UniformStream&) = delete;
  UniformStream& operator=(const UniformStream&) = delete;

  double Next();
  // Not OK when the keystream could not be made (then Next gave 0.5s).
  const absl::Status& status() const { return status_; }
  uint64_t drawn() const { return drawn_; }

 private:
  void Refill();

  Key32 key_;
  SecretBytes block_;
  size_t at_ = 0;
  uint64_t chunk_ = 0;
  uint64_t drawn_ = 0;
  absl::Status status_;
};

// log P(X = k) for X ~ Poisson(lambda), lambda > 0, k >= 0.
double LogPoissonPmf(int64_t k, double lambda);

// One draw of Poisson(lambda) (lambda >= 0, below 2^52).
int64_t SamplePoisson(double lambda, UniformStream& u);

// One draw of Skellam of variance mu: Poisson(mu/2) - Poisson(mu/2).
int64_t SampleSkellam(double mu, UniformStream& u);

// The party's noise key for (round, model): RAND_bytes when seed is 0,
// else derived from the seed.
absl::StatusOr<Key32> PartyNoiseKey(uint64_t seed, int64_t round,
                                    uint32_t model, uint32_t party);

// Adds one Skellam(encoding.noise_mu) draw to each of q's first K words
// (mod 2^32), from the key of (encoding.noise_seed, round, model, party);
// nothing when noise_mu is 0. InvalidArgument for a mu that is negative,
// not finite or above 2^50; Internal when no keystream could be made (q
// then is as it was: a party never sends an input without its noise).
absl::Status AddPartyNoise(const SecureEncoding& encoding, uint32_t party,
                           SecretWords* q);

// A party's own floor on the coordinator's word (shefl-client
// --dp-min-multiplier): the noise the session's t survivors add together,
// sqrt(t mu), in units of the most one of the party's clients can move the
// sum, max(weight x L2 clip) 2^f. FailedPrecondition (saying which) when a
// client has no L2 clip or the multiplier is below `min_multiplier`; OK
// when min_multiplier is 0. The party cannot see the run's other sessions,
// so this checks each session alone: the joint guarantee still rests on
// the planner's S / sqrt(m) split.
struct ClientClip {
  double weight = 0;
  double l2_clip = 0;
};
absl::Status CheckNoiseFloor(const SecureEncoding& encoding, uint32_t threshold,
                             const std::vector<ClientClip>& clients,
                             double min_multiplier);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_PARTY_NOISE_H_
