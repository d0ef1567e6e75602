#include "common/secure/party_noise.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/aes_ctr.h"
#include "common/secure/sha256.h"

namespace shefl {

namespace {

constexpr size_t kUniformsPerChunk = 4096;
constexpr size_t kChunkBytes = 8 * kUniformsPerChunk;
constexpr double kTwoPi = 6.283185307179586;

// Chunk c starts at counter block c * (kChunkBytes / 16), as a 128-bit
// big-endian integer: the chunks are one keystream cut in pieces.
Bytes ChunkIv(uint64_t chunk) {
  Bytes iv(kAesCtrIvBytes, 0);
  const uint64_t block = chunk * (kChunkBytes / 16);
  for (int i = 0; i < 8; ++i) iv[15 - i] = static_cast<uint8_t>(block >> (8 * i));
  return iv;
}

// log k! for small k, summed upwards as the Python party does.
double LogFactorialSmall(int64_t k) {
  double s = 0;
  for (int64_t i = 2; i <= k; ++i) s += std::log(static_cast<double>(i));
  return s;
}

// Hoermann's PTRS for lambda >= 10: two uniforms a try; about 1.1 tries.
int64_t SamplePtrs(double lambda, UniformStream& u) {
  const double slam = std::sqrt(lambda);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double v_r = 0.9277 - 3.6224 / (b - 2);
  while (true) {
    const double U = u.Next() - 0.5;
    const double V = u.Next();
    const double us = 0.5 - std::fabs(U);
    const double kf = std::floor((2 * a / us + b) * U + lambda + 0.43);
    if (us >= 0.07 && V <= v_r) return static_cast<int64_t>(kf);
    if (kf < 0 || (us < 0.013 && V > us)) continue;
    const double ratio = V * inv_alpha / (a / (us * us) + b);
    if (ratio <= 0) return static_cast<int64_t>(kf);  // log 0 = -inf accepts
    if (std::log(ratio) <= LogPoissonPmf(static_cast<int64_t>(kf), lambda))
      return static_cast<int64_t>(kf);
  }
}

}  // namespace

UniformStream::~UniformStream() { WipeBytes(key_.data(), key_.size()); }

void UniformStream::Refill() {
  auto bytes = AesCtrKeystream(key_, ChunkIv(chunk_), kChunkBytes);
  ++chunk_;
  at_ = 0;
  if (!bytes.ok()) {
    status_ = bytes.status();
    block_ = SecretBytes();
    return;
  }
  block_ = *std::move(bytes);
}

double UniformStream::Next() {
  if (at_ + 8 > block_.size()) Refill();
  if (!status_.ok()) return 0.5;
  uint64_t w = 0;
  for (int i = 0; i < 8; ++i) w |= static_cast<uint64_t>(block_[at_ + i]) << (8 * i);
  at_ += 8;
  ++drawn_;
  return static_cast<double>(w >> 11) * 0x1.0p-53;
}

// Stirling's series around lambda: -lambda + k log lambda - log k! with
// k log(k / lambda) as k log1p((k - lambda) / lambda), so that the terms of
// 1e15 that cancel are never formed.
double LogPoissonPmf(int64_t k, double lambda) {
  if (k < 10)
    return -lambda + static_cast<double>(k) * std::log(lambda) - LogFactorialSmall(k);
  const double dk = static_cast<double>(k);
  const double d = dk - lambda;
  const double k2 = dk * dk;
  const double series = 1 / (12 * dk) - 1 / (360 * dk * k2) + 1 / (1260 * dk * k2 * k2);
  return d - dk * std::log1p(d / lambda) - 0.5 * std::log(kTwoPi * dk) - series;
}

int64_t SamplePoisson(double lambda, UniformStream& u) {
  if (!(lambda > 0)) return 0;
  if (lambda >= 10) return SamplePtrs(lambda, u);
  // Knuth: the count of uniforms whose product stays above e^-lambda.
  const double limit = std::exp(-lambda);
  int64_t k = 0;
  double p = u.Next();
  while (p > limit) {
    ++k;
    p *= u.Next();
  }
  return k;
}

int64_t SampleSkellam(double mu, UniformStream& u) {
  const int64_t a = SamplePoisson(mu / 2, u);
  const int64_t b = SamplePoisson(mu / 2, u);
  return a - b;
}

absl::StatusOr<Key32> PartyNoiseKey(uint64_t seed, int64_t round,
                                    uint32_t model, uint32_t party) {
  Key32 key{};
  if (seed == 0) {
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1)
      return absl::InternalError("privacy: RAND_bytes failed for the party's noise key");
    return key;
  }
  const std::string label = "shefl party noise v1";
  Bytes text(label.begin(), label.end());
  const auto put = [&text](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) text.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(seed, 8);
  put(static_cast<uint64_t>(round), 8);
  put(model, 4);
  put(party, 4);
  return Sha256(text);
}

absl::Status AddPartyNoise(const SecureEncoding& encoding, uint32_t party,
                           SecretWords* q) {
  const double mu = encoding.noise_mu;
  if (mu == 0) return absl::OkStatus();
  if (!(mu > 0) || !std::isfinite(mu) || mu > 0x1.0p50)
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy: a noise variance of ", mu, " is not in (0, 2^50]"));
  const size_t k = encoding.support.size();
  if (q->size() < k)
    return absl::InvalidArgumentError(absl::StrCat(
        "privacy: an input of ", q->size(), " words for a support of ", k));
  SHEFL_ASSIGN_OR_RETURN(Key32 key, PartyNoiseKey(encoding.noise_seed,
                                                  encoding.round,
                                                  encoding.model, party));
  UniformStream u(key);
  WipeBytes(key.data(), key.size());
  SecretWords noise(k);
  for (size_t j = 0; j < k; ++j)
    noise[j] = static_cast<uint32_t>(SampleSkellam(mu, u));
  if (!u.status().ok())
    return absl::InternalError(absl::StrCat(
        "privacy: no noise stream (", u.status().message(),
        "); the input is not sent"));
  for (size_t j = 0; j < k; ++j) (*q)[j] += noise[j];
  return absl::OkStatus();
}

absl::Status CheckNoiseFloor(const SecureEncoding& encoding, uint32_t threshold,
                             const std::vector<ClientClip>& clients,
                             double min_multiplier) {
  if (min_multiplier <= 0) return absl::OkStatus();
  double unit = 0;
  for (const ClientClip& c : clients) {
    if (!(c.l2_clip > 0))
      return absl::FailedPreconditionError(
          "privacy: the session gives a client no L2 clip, and this daemon "
          "asks for distributed DP (--dp-min-multiplier)");
    unit = std::max(unit, c.weight * c.l2_clip);
  }
  unit = std::ldexp(unit, encoding.scale_bits);
  const double noise =
      std::sqrt(static_cast<double>(threshold) * std::max(encoding.noise_mu, 0.0));
  if (!(noise >= min_multiplier * unit * (1 - 1e-9)))
    return absl::FailedPreconditionError(absl::StrCat(
        "privacy: the session's noise is ", noise / unit,
        " times what one client can move its sum, below --dp-min-multiplier ",
        min_multiplier, "; the input is not sent"));
  return absl::OkStatus();
}

}  // namespace shefl
