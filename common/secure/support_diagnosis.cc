#include "common/secure/support_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/secure/vote_counts.h"

namespace shefl {
namespace {

template <typename T>
std::string LittleEndian(const std::vector<T>& v) {
  static_assert(sizeof(T) == 4);
  std::string out(4 * v.size(), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t w;
    std::memcpy(&w, &v[i], 4);
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<char>(w >> (8 * b));
  }
  return out;
}

uint32_t WordAt(const std::string& s, size_t i) {
  uint32_t w = 0;
  for (int b = 0; b < 4; ++b)
    w |= static_cast<uint32_t>(static_cast<uint8_t>(s[4 * i + b])) << (8 * b);
  return w;
}

}  // namespace

void AddClientDiagnosis(absl::Span<const float> delta,
                        absl::Span<const float> residual, double weight,
                        double clip, uint64_t own_k, SupportDiagnosis* d) {
  std::vector<float> x(delta.begin(), delta.end());
  if (residual.size() == x.size())
    for (size_t j = 0; j < x.size(); ++j) x[j] += residual[j];
  if (d->dense.empty()) d->dense.assign(x.size(), 0.0);
  for (size_t j = 0; j < x.size() && j < d->dense.size(); ++j) {
    const double v = std::isnan(x[j]) ? 0.0 : std::clamp<double>(x[j], -clip, clip);
    d->dense[j] += weight * v;
  }
  std::vector<uint32_t> mine;
  for (uint64_t p : OwnTopK(x, own_k)) mine.push_back(static_cast<uint32_t>(p));
  std::vector<uint32_t> merged;
  std::set_union(d->own_union.begin(), d->own_union.end(), mine.begin(),
                 mine.end(), std::back_inserter(merged));
  d->own_union = std::move(merged);
}

std::string DenseBytes(const SupportDiagnosis& d) {
  std::vector<float> f(d.dense.begin(), d.dense.end());
  return LittleEndian(f);
}

std::string UnionBytes(const SupportDiagnosis& d) {
  return LittleEndian(d.own_union);
}

absl::Status AddPartyDiagnosis(const std::string& dense,
                               const std::string& own_union, uint64_t dim,
                               SupportDiagnosis* sum) {
  if (dense.size() != 4 * dim)
    return absl::InvalidArgumentError(absl::StrCat(
        "diagnosis: dense holds ", dense.size(), " bytes, not 4 x d = ", 4 * dim));
  if (own_union.size() % 4 != 0 || own_union.size() / 4 > dim)
    return absl::InvalidArgumentError(absl::StrCat(
        "diagnosis: own_union holds ", own_union.size(),
        " bytes, not a whole number of positions up to d = ", dim));
  std::vector<double> values(dim);
  for (uint64_t j = 0; j < dim; ++j) {
    const uint32_t w = WordAt(dense, j);
    float f;
    std::memcpy(&f, &w, 4);
    if (!std::isfinite(f))
      return absl::InvalidArgumentError(
          absl::StrCat("diagnosis: dense value ", j, " is not finite"));
    values[j] = f;
  }
  std::vector<uint32_t> positions(own_union.size() / 4);
  for (size_t i = 0; i < positions.size(); ++i) {
    positions[i] = WordAt(own_union, i);
    if (positions[i] >= dim || (i > 0 && positions[i] <= positions[i - 1]))
      return absl::InvalidArgumentError(absl::StrCat(
          "diagnosis: own_union position ", i, " is not ascending below d = ", dim));
  }
  if (sum->dense.empty()) sum->dense.assign(dim, 0.0);
  for (uint64_t j = 0; j < dim; ++j) sum->dense[j] += values[j];
  std::vector<uint32_t> merged;
  std::set_union(sum->own_union.begin(), sum->own_union.end(), positions.begin(),
                 positions.end(), std::back_inserter(merged));
  sum->own_union = std::move(merged);
  return absl::OkStatus();
}

SupportFit FitOf(const SupportDiagnosis& sum,
                 absl::Span<const uint32_t> support) {
  SupportFit fit;
  double total = 0, on = 0;
  for (double v : sum.dense) total += v * v;
  for (uint32_t j : support)
    if (j < sum.dense.size()) on += sum.dense[j] * sum.dense[j];
  if (total > 0) fit.energy = on / total;
  std::vector<uint32_t> both;
  std::set_intersection(sum.own_union.begin(), sum.own_union.end(),
                        support.begin(), support.end(), std::back_inserter(both));
  if (!sum.own_union.empty())
    fit.overlap = static_cast<double>(both.size()) / sum.own_union.size();
  return fit;
}

}  // namespace shefl
