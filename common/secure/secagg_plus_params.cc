#include "common/secure/secagg_plus_params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"

namespace shefl {

namespace {

// gamma * n and delta * n are rounded down to whole parties after adding
// this, so that a fraction like 1/3, stored a little below its value, still
// counts every party it names (erring towards more corrupt and dropped
// parties, the safe side); it is far too small to add a party otherwise.
constexpr double kSlack = 1e-14;

struct Population {
  int64_t n = 0;
  int64_t corrupt = 0;  // floor(gamma n): parties colluding with the server
  int64_t dropped = 0;  // floor(delta n)
};

// ln C(m, r) for 0 <= r <= m, as a sum of min(r, m - r) logarithms (no
// lgamma: glibc's writes the global signgam, so it is not thread-safe).
long double LogChoose(int64_t m, int64_t r) {
  r = std::min(r, m - r);
  long double sum = 0;
  for (int64_t i = 0; i < r; ++i)
    sum += std::log(static_cast<long double>(m - i) / (i + 1));
  return sum;
}

// P(X = x) for x = 0..draws, X the marked parties among `draws` drawn
// without replacement from `total` of which `marked` are marked: the
// number of corrupt (or surviving) neighbours of a party. The first term of
// the support is computed in logarithms, the rest by the ratio of
// successive terms, in long double (its range reaches e^-11000, so no term
// that could matter underflows).
std::vector<long double> HypergeometricPmf(int64_t total, int64_t marked,
                                           int64_t draws) {
  std::vector<long double> pmf(draws + 1, 0.0L);
  const int64_t lo = std::max<int64_t>(0, draws - (total - marked));
  const int64_t hi = std::min(draws, marked);
  long double log_p = LogChoose(marked, lo) +
                      LogChoose(total - marked, draws - lo) -
                      LogChoose(total, draws);
  for (int64_t x = lo; x <= hi; ++x) {
    pmf[x] = std::exp(log_p);
    const long double up = static_cast<long double>(marked - x) * (draws - x);
    const long double down =
        static_cast<long double>(x + 1) * (total - marked - draws + x + 1);
    if (x < hi) log_p += std::log(up) - std::log(down);
  }
  return pmf;
}

// ln of a bound on P(the honest survivors are disconnected) in a random
// Harary graph of even degree k. The ring joins each party to the k / 2 on
// either side, so a run of fewer than k / 2 removed parties is jumped over,
// and cutting the ring takes two disjoint runs of k / 2 removed parties:
// n places for the first, n - k - 1 for the second that leave parties on
// both sides, each pair counted twice. The k parties of one pair are all
// among the `bad` corrupt or dropped ones with probability
// (bad)_k / (n)_k; the union bound sums that over the pairs.
long double LogDisconnectBound(int64_t n, int64_t bad, int64_t k) {
  if (k > bad) return -std::numeric_limits<long double>::infinity();
  long double log_p = std::log(static_cast<long double>(n)) +
                      std::log(static_cast<long double>(n - k - 1)) -
                      std::log(2.0L);
  for (int64_t i = 0; i < k; ++i)
    log_p += std::log(static_cast<long double>(bad - i) / (n - i));
  return log_p;
}

// The smallest c with P(corrupt neighbours > c) < q: the sum of the upper
// tail, from its smallest terms, until one more would reach q.
int64_t CorruptBound(const std::vector<long double>& pmf, long double q) {
  int64_t c = static_cast<int64_t>(pmf.size()) - 1;
  long double above = 0;
  while (c > 0 && above + pmf[c] < q) above += pmf[c--];
  return c;
}

// P(surviving neighbours < t), summed from the smallest terms.
long double FewSurvivors(const std::vector<long double>& pmf, int64_t t) {
  long double below = 0;
  for (int64_t x = 0; x < t && x < static_cast<int64_t>(pmf.size()); ++x)
    below += pmf[x];
  return below;
}

// The threshold of degree k when k meets the bounds, else nullopt. Each of
// the two security events gets 2^-(sigma + 1), so together they stay below
// 2^-sigma; the events about one party's neighbourhood are union-bounded
// over the n parties, so each party's share is the budget over n.
std::optional<int64_t> CheckDegree(const Population& p, int64_t k, int sigma,
                                   int eta, bool majority) {
  const long double log_security = -(sigma + 1) * std::log(2.0L);
  // Disconnected honest survivors would let the server learn the sum of
  // one component, a partial sum of honest inputs.
  if (LogDisconnectBound(p.n, p.corrupt + p.dropped, k) >= log_security)
    return std::nullopt;
  // Security: t corrupt neighbours of an honest party would hold enough
  // shares to open both its self seed and its masking key, and unmask it.
  const long double q_security = std::ldexp(1.0L, -(sigma + 1)) / p.n;
  int64_t t = std::max<int64_t>(
      CorruptBound(HypergeometricPmf(p.n, p.corrupt, k), q_security) + 1, 2);
  if (majority) t = std::max<int64_t>(t, (k + 1) / 2 + 1);
  // Correctness: a party with fewer than t surviving neighbours cannot
  // have its secrets reconstructed when it drops, and the round fails.
  const long double q_correct = std::ldexp(1.0L, -eta) / p.n;
  const auto survivors = HypergeometricPmf(p.n, p.n - p.dropped, k);
  if (t > k || FewSurvivors(survivors, t) >= q_correct) return std::nullopt;
  return t;
}

// All pairs: nothing disconnects, and the counts are exact, not drawn, so
// t must exceed the corrupt parties and not exceed the survivors.
absl::StatusOr<GraphParams> CompleteGraph(const Population& p) {
  const int64_t t = std::max<int64_t>(p.corrupt + 1, 2);
  if (t > p.n - p.dropped)
    return absl::FailedPreconditionError(absl::StrCat(
        "SecAgg+ parameters: no threshold fits ", p.n, " parties with ",
        p.corrupt, " corrupt and ", p.dropped, " dropped, even on all pairs"));
  return GraphParams{p.n, p.n - 1, t};
}

absl::Status CheckFraction(double v, const char* what) {
  if (v >= 0 && v < 1) return absl::OkStatus();  // false for NaN
  return absl::InvalidArgumentError(absl::StrCat(
      "SecAgg+ parameters: ", what, " must be in [0, 1), got ", v));
}

absl::Status CheckArguments(int64_t n, double gamma, double delta, int sigma,
                            int eta) {
  if (n < 2 || n > kMaxGraphParties)
    return absl::InvalidArgumentError(
        absl::StrCat("SecAgg+ parameters: n (parties) must be 2..",
                     kMaxGraphParties, ", got ", n));
  SHEFL_RETURN_IF_ERROR(CheckFraction(gamma, "gamma (colluding fraction)"));
  SHEFL_RETURN_IF_ERROR(CheckFraction(delta, "delta (dropout fraction)"));
  if (gamma + delta > kMaxBadFraction + kSlack)  // 0.45 + 0.45 passes
    return absl::InvalidArgumentError(absl::StrCat(
        "SecAgg+ parameters: gamma + delta must be at most ", kMaxBadFraction,
        ", got ", gamma + delta, " (gamma ", gamma, ", delta ", delta, ")"));
  if (sigma < 1 || sigma > 200)
    return absl::InvalidArgumentError(absl::StrCat(
        "SecAgg+ parameters: sigma (security bits) must be 1..200, got ",
        sigma));
  if (eta < 1 || eta > 200)
    return absl::InvalidArgumentError(absl::StrCat(
        "SecAgg+ parameters: eta (correctness bits) must be 1..200, got ",
        eta));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GraphParams> FindGraphParams(int64_t n, double gamma,
                                            double delta, int sigma, int eta,
                                            bool majority) {
  SHEFL_RETURN_IF_ERROR(CheckArguments(n, gamma, delta, sigma, eta));
  Population p;
  p.n = n;
  p.corrupt = static_cast<int64_t>(std::floor((gamma + kSlack) * n));
  p.dropped = static_cast<int64_t>(std::floor((delta + kSlack) * n));
  // Harary graphs of even degree only: the ring with k / 2 on each side.
  for (int64_t k = 2; k < n - 1; k += 2)
    if (std::optional<int64_t> t = CheckDegree(p, k, sigma, eta, majority))
      return GraphParams{n, k, *t};
  return CompleteGraph(p);
}

}  // namespace shefl
