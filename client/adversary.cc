#include "client/adversary.h"

#include <ATen/Functions.h>

#include <cmath>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"

namespace shefl {

absl::StatusOr<Adversary> Adversary::Parse(const std::string& mode) {
  for (const char* m : {"huge", "flip", "noise", "shard", "labels", "stall",
                        "garbage"})
    if (mode == m) return Adversary(mode);
  return absl::InvalidArgumentError(absl::StrCat(
      "--adversary '", mode, "': expected one of ", Modes()));
}

void Adversary::TamperDelta(at::Tensor* delta) const {
  constexpr double kScale = 100;
  if (mode_ == "huge") {
    delta->zero_();
    delta->narrow(0, 0, 1).fill_(1e38);
  } else if (mode_ == "flip") {
    delta->mul_(-kScale);
  } else if (mode_ == "noise") {
    const double norm = delta->norm().item<double>();
    const double per = kScale * norm / std::sqrt(static_cast<double>(delta->numel()));
    *delta = at::randn_like(*delta).mul_(per);
  }
}

void Adversary::TamperWords(std::vector<uint32_t>* words) const {
  if (mode_ != "garbage") return;
  // Not reproducible on purpose: a liar owes nobody a seed.
  std::random_device device;
  std::mt19937 rng(device());
  for (uint32_t& w : *words) w += static_cast<uint32_t>(rng());
}

uint64_t Adversary::ClaimSamples(uint64_t real) const {
  return mode_ == "shard" ? uint64_t{1} << 32 : real;
}

std::vector<uint64_t> Adversary::ClaimLabels(std::vector<uint64_t> real) const {
  if (mode_ == "shard" && !real.empty()) {
    // Counts must add up to the claimed size, or the coordinator ignores them.
    std::fill(real.begin(), real.end(), 0);
    real[0] = uint64_t{1} << 32;
  } else if (mode_ == "labels" && !real.empty()) {
    const uint64_t total = std::accumulate(real.begin(), real.end(), uint64_t{0});
    std::fill(real.begin(), real.end(), 0);
    real[0] = total;
  }
  return real;
}

}  // namespace shefl
