#include "common/secure/secure_input.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/secure/fixed_point.h"
#include "common/secure/vote_counts.h"

namespace shefl {

namespace {

// min(1, l2_clip / ||x on the support||), the norm summed in support order
// in double (the Python party sums the same way); 1 without a clip. A
// non-finite norm scales by 0: such a client sends nothing. The scale is
// rounded down to 21 significant bits: two parties whose trainings differ
// in a last bit somewhere then still scale every other value alike, and
// x times it is exact in double.
double L2Scale(const std::vector<float>& x, const std::vector<uint32_t>& support,
               double l2_clip) {
  if (l2_clip == 0) return 1;
  double squares = 0;
  for (uint32_t i : support) {
    const double v = x[i];
    squares += v * v;
  }
  const double norm = std::sqrt(squares);
  if (!std::isfinite(norm)) return 0;
  if (!(norm > l2_clip)) return 1;
  int e = 0;
  const double m = std::frexp(l2_clip / norm, &e);
  return std::ldexp(std::floor(std::ldexp(m, 21)), e - 21);
}

}  // namespace

absl::Status AddClientInput(absl::Span<const float> delta, double weight,
                            uint32_t client, const SecureEncoding& encoding,
                            std::vector<float>* residual, SecretWords* q,
                            uint64_t own_k, double l2_clip) {
  const size_t d = delta.size(), k = encoding.support.size();
  const size_t words = encoding.words();
  if (!(weight > 0 && weight <= 1))
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: client ", client, "'s weight ", weight,
        " is not in (0, 1]"));
  if (l2_clip < 0 || !std::isfinite(l2_clip))
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: client ", client, "'s L2 clip ", l2_clip,
        " is not >= 0"));
  if (!residual->empty() && residual->size() != d)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: client ", client, "'s residual has ",
        residual->size(), " entries, its update ", d));
  if (!q->empty() && q->size() != words)
    return absl::InvalidArgumentError("secure aggregation: inputs of two sizes");
  if (k > 0 && encoding.support.back() >= d)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: support coordinate ", encoding.support.back(),
        " beyond the model's ", d));
  for (const TensorGrid& g : encoding.vote)
    if (g.cols == 0 || g.offset + g.numel() > d)
      return absl::InvalidArgumentError(absl::StrCat(
          "secure aggregation: a vote grid of ", g.rows, " x ", g.cols,
          " at ", g.offset, " beyond the model's ", d));
  // x = delta + residual: what the client owes the model.
  std::vector<float> x(delta.begin(), delta.end());
  if (!residual->empty())
    for (size_t i = 0; i < d; ++i) x[i] += (*residual)[i];
  // The vote counts where the update itself is large, before what is
  // sent leaves x.
  std::vector<uint64_t> own;
  if (!encoding.vote.empty()) own = OwnTopK(x, own_k);
  const double scale = L2Scale(x, encoding.support, l2_clip);
  SecretVector<float> weighted(k);
  for (size_t j = 0; j < k; ++j) {
    const double v = scale == 0 ? 0.0 : x[encoding.support[j]] * scale;
    weighted[j] = static_cast<float>(
        weight * std::fmin(std::fmax(v, -encoding.clip), encoding.clip));
  }
  std::mt19937_64 rng =
      MakeRng(encoding.seed, SeedPurpose::kSecureRounding,
              {static_cast<uint64_t>(encoding.round), encoding.model, client});
  auto enc = EncodeFixedPoint(weighted, encoding.clip, encoding.scale_bits, rng);
  if (!enc.ok()) return enc.status();
  // What was sent, in the client's own units, leaves its books; the rest
  // (all of x off the support) stays.
  for (size_t j = 0; j < k; ++j) {
    const double sent = std::ldexp(static_cast<double>(static_cast<int32_t>(enc->q[j])),
                                   -encoding.scale_bits) / weight;
    x[encoding.support[j]] = static_cast<float>(x[encoding.support[j]] - sent);
  }
  if (q->empty()) *q = SecretWords(words);
  *residual = std::move(x);
  for (size_t j = 0; j < k; ++j) (*q)[j] += enc->q[j];
  AddVoteCounts(own, encoding.vote, k, q);
  WipeBytes(own.data(), own.size() * sizeof(uint64_t));
  // The client's words are as secret as q (no return comes between).
  WipeBytes(enc->q.data(), enc->q.size() * sizeof(uint32_t));
  return absl::OkStatus();
}

void WidenValueWords(const SecureEncoding& encoding, std::vector<uint32_t>* sum) {
  if (encoding.word_bits >= 32) return;
  const size_t k = std::min(encoding.support.size(), sum->size());
  for (size_t j = 0; j < k; ++j)
    (*sum)[j] = static_cast<uint32_t>(static_cast<int32_t>(
        static_cast<int16_t>(static_cast<uint16_t>((*sum)[j] & 0xffffu))));
}

absl::StatusOr<std::vector<float>> SecureUpdate(absl::Span<const uint32_t> sum,
                                                double weight_mass,
                                                const SecureEncoding& encoding) {
  if (sum.size() != encoding.words())
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: a sum of ", sum.size(), " words for a support of ",
        encoding.support.size(), " and a vote of ",
        encoding.words() - encoding.support.size()));
  if (!(weight_mass > 0) || !std::isfinite(weight_mass))
    return absl::InvalidArgumentError("secure aggregation: no weight survived");
  std::vector<float> out(encoding.support.size());
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = static_cast<float>(
        std::ldexp(static_cast<double>(static_cast<int32_t>(sum[j])),
                   -encoding.scale_bits) / weight_mass);
  return out;
}

}  // namespace shefl
