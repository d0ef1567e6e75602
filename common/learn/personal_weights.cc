// Fed-ensemble's personalised weights (declared in evaluate.h):
// alpha_ik = softmax_k(-loss_i(w_k) / gamma). Dividing by gamma, not
// multiplying, is docs/DESIGN.md's choice ("Ensemble inference"): it
// makes a large gamma drive the weights to uniform, as the paper says.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/learn/evaluate.h"

namespace shefl {

absl::StatusOr<std::vector<double>> PersonalisedWeights(
    const std::vector<double>& member_losses, double gamma) {
  if (!(gamma > 0) || !std::isfinite(gamma)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma must be > 0, got ", gamma));
  }
  if (member_losses.empty()) {
    return absl::InvalidArgumentError("no member losses");
  }
  double lo = std::numeric_limits<double>::infinity();
  for (double l : member_losses) {
    if (!std::isfinite(l)) {
      return absl::InvalidArgumentError(
          absl::StrCat("member loss ", l, " is not finite"));
    }
    lo = std::min(lo, l);
  }
  // Shift by the smallest loss so the largest exponent is 0.
  std::vector<double> alpha;
  double sum = 0;
  for (double l : member_losses) {
    alpha.push_back(std::exp(-(l - lo) / gamma));
    sum += alpha.back();
  }
  for (double& a : alpha) a /= sum;
  return alpha;
}

absl::StatusOr<std::vector<std::vector<double>>> PersonalisedWeights(
    const std::vector<std::vector<double>>& losses, double gamma) {
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < losses.size(); ++i) {
    absl::StatusOr<std::vector<double>> a =
        PersonalisedWeights(losses[i], gamma);
    if (!a.ok()) {
      return absl::Status(
          a.status().code(),
          absl::StrCat("client ", i, ": ", a.status().message()));
    }
    out.push_back(*std::move(a));
  }
  return out;
}

}  // namespace shefl
