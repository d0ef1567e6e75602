// SecAgg+ (common/secure/secagg_plus_params.h, neighbour_graph.h): the
// finder's degrees and thresholds equal the published table of Google's
// reference finder, the degree grows with n and with the colluding
// fraction, the found degree meets the bounds (recomputed here apart, with
// lgamma) and the one below it does not, bad arguments are refused by
// name; the graph is the same whichever order a party lists the roster in,
// another seed gives another graph, it is symmetric, k-regular and
// connected, complete at degree n - 1, pinned for one seed; and pairwise
// masks restricted to the graph cancel, with and without dropouts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/secure/aes_ctr.h"
#include "common/secure/bytes.h"
#include "common/secure/masks.h"
#include "common/secure/neighbour_graph.h"
#include "common/secure/secagg_plus_params.h"
#include "common/secure/session_id.h"
#include "common/secure/sha256.h"
#include "common/secure/x25519.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

GraphParams Find(int64_t n, double gamma, double delta) {
  absl::StatusOr<GraphParams> p = FindGraphParams(n, gamma, delta);
  INFO("n " << n << " gamma " << gamma << " delta " << delta << ": "
            << p.status().ToString());
  REQUIRE(p.ok());
  return *p;
}

struct Row {
  int64_t n;
  double gamma, delta;
  int64_t degree, threshold;
};

// The reference finder's table (semi-honest server, sigma 40, eta 20).
// The rows the design quotes as "gamma = delta = 1/3" are its 0.33 rows,
// and its gamma = 0.05 rows have delta = 0.33.
constexpr Row kTable[] = {
    {1000, 0.33, 0.33, 286, 150},   {10000, 0.33, 0.33, 422, 221},
    {1000, 0.05, 0.33, 72, 24},     {10000, 0.05, 0.33, 86, 29},
    {10, 0.33, 0.33, 8, 4},         {100, 0.33, 0.33, 68, 34},
    {100000, 0.33, 0.33, 480, 251}, {1000000, 0.33, 0.33, 518, 270},
    {100, 0.05, 0.33, 28, 6},       {100000, 0.05, 0.33, 96, 32},
    {1000000, 0.05, 0.33, 102, 34}, {10, 0.33, 0.05, 4, 4},
    {100, 0.33, 0.05, 34, 29},      {1000, 0.33, 0.05, 78, 60},
    {10000, 0.33, 0.05, 92, 70},    {100000, 0.33, 0.05, 102, 77},
    {1000000, 0.33, 0.05, 110, 83}, {100, 0.45, 0.45, 92, 46},
    {1000, 0.45, 0.45, 822, 417},
};

TEST_CASE("the finder gives the reference finder's degrees and thresholds") {
  for (const Row& r : kTable) {
    const GraphParams p = Find(r.n, r.gamma, r.delta);
    INFO("n " << r.n << " gamma " << r.gamma << " delta " << r.delta);
    CHECK(p.n == r.n);
    CHECK(p.degree == r.degree);
    CHECK(p.threshold == r.threshold);
    CHECK_FALSE(p.complete());
  }
}

TEST_CASE("where the finder departs from the reference, and exact thirds") {
  // n = 10, gamma 0.05, delta 0.33: the reference gives degree 4 because
  // it raises t to 2 after checking correctness for t = 1; with t = 2 a
  // party loses all but one of its 4 neighbours with probability 1/30.
  const GraphParams small = Find(10, 0.05, 0.33);
  CHECK(small.degree == 6);
  CHECK(small.threshold == 2);
  // gamma = delta = 1/3 exactly counts 333 (3,333) parties, not 330.
  CHECK(Find(1000, 1.0 / 3, 1.0 / 3).degree == 292);
  CHECK(Find(10000, 1.0 / 3, 1.0 / 3).degree == 442);
  CHECK(Find(1000, 0.05, 1.0 / 3).degree == 72);
  CHECK(Find(10000, 0.05, 1.0 / 3).degree == 86);
}

TEST_CASE("the degree grows with n and with gamma") {
  const int64_t ns[] = {200,  300,   500,   1000,  2000,
                        5000, 10000, 20000, 50000, 100000};
  for (double gamma : {0.05, 0.33}) {
    int64_t last = 0;
    for (int64_t n : ns) {
      const GraphParams p = Find(n, gamma, 0.33);
      INFO("gamma " << gamma << " n " << n);
      CHECK(p.degree >= last);
      CHECK(p.degree < n - 1);
      last = p.degree;
    }
  }
  for (int64_t n : {200, 1000, 10000}) {
    int64_t last = 0;
    for (double gamma = 0; gamma <= 0.45; gamma += 0.05) {
      const GraphParams p = Find(n, gamma, 0.33);
      INFO("n " << n << " gamma " << gamma);
      CHECK(p.degree >= last);
      last = p.degree;
    }
  }
}

// P(lo <= X <= hi), X hypergeometric: marked among k drawn from n, m
// marked; each term from lgamma.
double Mass(int64_t n, int64_t m, int64_t k, int64_t lo, int64_t hi) {
  auto lc = [](double a, double b) {
    return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1);
  };
  double sum = 0;
  for (int64_t x = std::max<int64_t>(lo, 0); x <= std::min(hi, k); ++x)
    if (x <= m && k - x <= n - m)
      sum += std::exp(lc(m, x) + lc(n - m, k - x) - lc(n, k));
  return sum;
}

// Whether degree k and threshold t meet the bounds, recomputed apart.
bool Meets(int64_t n, int64_t a, int64_t d, int64_t k, int64_t t) {
  const double q_sec = std::ldexp(1.0, -41);
  double log_cut = -std::numeric_limits<double>::infinity();
  if (k <= a + d)
    log_cut = std::log(n * (n - k - 1) / 2.0) + std::lgamma(a + d + 1) -
              std::lgamma(a + d - k + 1) + std::lgamma(n - k + 1) -
              std::lgamma(n + 1);
  return log_cut < std::log(q_sec) && Mass(n, a, k, t, k) < q_sec / n &&
         Mass(n, n - d, k, 0, t - 1) < std::ldexp(1.0, -20) / n;
}

// The smallest threshold of degree k the security bound allows.
int64_t SmallestT(int64_t n, int64_t a, int64_t k) {
  int64_t t = 2;
  while (t <= k && Mass(n, a, k, t, k) >= std::ldexp(1.0, -41) / n) ++t;
  return t;
}

TEST_CASE("the found degree meets the bounds and the one below does not") {
  for (const Row& r : kTable) {
    if (r.n > 10000 || r.n < 100) continue;
    const GraphParams p = Find(r.n, r.gamma, r.delta);
    const int64_t a = static_cast<int64_t>(std::floor(r.gamma * r.n + 1e-9));
    const int64_t d = static_cast<int64_t>(std::floor(r.delta * r.n + 1e-9));
    INFO("n " << r.n << " gamma " << r.gamma << " delta " << r.delta);
    CHECK(Meets(r.n, a, d, p.degree, p.threshold));
    CHECK(p.threshold == SmallestT(r.n, a, p.degree));
    const int64_t below = p.degree - 2;
    CHECK_FALSE(Meets(r.n, a, d, below, SmallestT(r.n, a, below)));
  }
}

TEST_CASE("a few parties get the complete graph") {
  for (int64_t n : {2, 3, 5}) {
    const GraphParams p = Find(n, 0.33, 0.33);
    INFO("n " << n);
    CHECK((p.complete() && p.degree == n - 1 && p.threshold == 2));
  }
  // Two parties, one of which may drop: no threshold of 2 can be met.
  CHECK(FindGraphParams(2, 0, 0.5).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

template <typename T>
void Refused(const absl::StatusOr<T>& p, const std::string& name) {
  INFO(p.status().ToString());
  REQUIRE(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(p.status().message()).find(name) != std::string::npos);
}

TEST_CASE("the finder refuses bad arguments, naming them") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Refused(FindGraphParams(1, 0.1, 0.1), "n (parties)");
  Refused(FindGraphParams(0, 0.1, 0.1), "n (parties)");
  Refused(FindGraphParams(-3, 0.1, 0.1), "n (parties)");
  Refused(FindGraphParams(kMaxGraphParties + 1, 0.1, 0.1), "n (parties)");
  Refused(FindGraphParams(1000, -0.01, 0.1), "gamma (colluding");
  Refused(FindGraphParams(1000, 1.0, 0.0), "gamma (colluding");
  Refused(FindGraphParams(1000, nan, 0.1), "gamma (colluding");
  Refused(FindGraphParams(1000, 0.1, -1e-9), "delta (dropout");
  Refused(FindGraphParams(1000, 0.1, 1.5), "delta (dropout");
  Refused(FindGraphParams(1000, 0.1, nan), "delta (dropout");
  Refused(FindGraphParams(1000, 0.5, 0.45), "gamma + delta");
  Refused(FindGraphParams(1000, 0.1, 0.1, 0), "sigma");
  Refused(FindGraphParams(1000, 0.1, 0.1, 40, 0), "eta");
  Refused(FindGraphParams(1000, 0.1, 0.1, 40, 201), "eta");
}

Key32 Hash(const std::string& s) {
  absl::StatusOr<Key32> d = Sha256(AsBytes(s));
  REQUIRE(d.ok());
  return *d;
}

NeighbourGraph Graph(const Key32& seed, const std::vector<uint32_t>& parties,
                     int64_t degree) {
  absl::StatusOr<NeighbourGraph> g = MakeNeighbourGraph(seed, parties, degree);
  INFO(g.status().ToString());
  REQUIRE(g.ok());
  return *std::move(g);
}

// The neighbours of u, by value (a range-for over *g.Neighbours(u) would
// read a StatusOr that is gone).
std::vector<uint32_t> Nb(const NeighbourGraph& g, uint32_t u) {
  absl::StatusOr<std::vector<uint32_t>> nb = g.Neighbours(u);
  REQUIRE(nb.ok());
  return *std::move(nb);
}

std::vector<uint32_t> Roster(int n) {
  std::vector<uint32_t> r;
  for (int i = 0; i < n; ++i) r.push_back(1000 + 7 * i);
  return r;
}

std::map<uint32_t, std::vector<uint32_t>> AllNeighbours(
    const NeighbourGraph& g) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  for (uint32_t u : g.ring()) out[u] = Nb(g, u);
  return out;
}

TEST_CASE("every party derives the same graph, whatever its roster order") {
  const Key32 seed = Hash("session");
  const std::vector<uint32_t> roster = Roster(300);
  const NeighbourGraph reference = Graph(seed, roster, 72);
  const auto expected = AllNeighbours(reference);
  std::mt19937 rng(7);
  for (uint32_t party : {roster[0], roster[150], roster[299]}) {
    // Each party lists the roster its own way, and computes its own view.
    std::vector<uint32_t> view = roster;
    std::shuffle(view.begin(), view.end(), rng);
    const NeighbourGraph g = Graph(seed, view, 72);
    CHECK(g.ring() == reference.ring());
    CHECK(Nb(g, party) == expected.at(party));
    CHECK(AllNeighbours(g) == expected);
  }
}

TEST_CASE("another seed gives another graph") {
  const std::vector<uint32_t> roster = Roster(300);
  const NeighbourGraph a = Graph(Hash("session 1"), roster, 72);
  const NeighbourGraph b = Graph(Hash("session 2"), roster, 72);
  CHECK(a.ring() != b.ring());
  const auto na = AllNeighbours(a), nb = AllNeighbours(b);
  int same = 0;
  for (uint32_t u : roster) same += na.at(u) == nb.at(u);
  CHECK(same == 0);
}

// Whether the graph is connected: a search from the first ring party.
bool Connected(const NeighbourGraph& g) {
  std::set<uint32_t> seen = {g.ring()[0]};
  std::vector<uint32_t> todo = {g.ring()[0]};
  while (!todo.empty()) {
    const uint32_t u = todo.back();
    todo.pop_back();
    for (uint32_t v : Nb(g, u))
      if (seen.insert(v).second) todo.push_back(v);
  }
  return seen.size() == g.size();
}

TEST_CASE("the graph is symmetric, k-regular and connected") {
  for (int n : {4, 5, 10, 101, 300, 1000}) {
    for (int64_t k : {2, 4, 8, 72, 286}) {
      if (k > n - 2) continue;
      const NeighbourGraph g =
          Graph(Hash("s" + std::to_string(n)), Roster(n), k);
      INFO("n " << n << " k " << k);
      CHECK_FALSE(g.complete());
      CHECK(g.degree() == k);
      CHECK(Connected(g));
      const auto all = AllNeighbours(g);
      int bad = 0;  // counted, so that a million pairs are a few checks
      for (const auto& [u, nb] : all) {
        bad += nb.size() != static_cast<size_t>(k);
        bad += !std::is_sorted(nb.begin(), nb.end());
        bad += std::adjacent_find(nb.begin(), nb.end()) != nb.end();
        for (uint32_t v : nb) {
          const auto& back = all.at(v);
          bad += v == u || !g.Adjacent(u, v);
          bad += !std::binary_search(back.begin(), back.end(), u);
        }
      }
      CHECK(bad == 0);
      CHECK(all.size() == static_cast<size_t>(n));
    }
  }
}

TEST_CASE("degree n - 1 or more is the complete graph: all pairs") {
  const std::vector<uint32_t> roster = Roster(9);
  for (int64_t k : {8, 9, 1000}) {
    const NeighbourGraph g = Graph(Hash("all"), roster, k);
    CHECK(g.complete());
    CHECK(g.degree() == 8);
    CHECK(g.ring() == roster);
    for (uint32_t u : roster) {
      std::vector<uint32_t> others;
      for (uint32_t v : roster)
        if (v != u) others.push_back(v);
      CHECK(Nb(g, u) == others);
    }
  }
  // Two parties: each the other's only neighbour.
  const NeighbourGraph two = Graph(Hash("two"), {5, 3}, 1);
  CHECK(Nb(two, 3) == std::vector<uint32_t>{5});
}

TEST_CASE("the graph of one seed is pinned") {
  // The ring for seed 00 01 .. 1f and parties 1..10, degree 4, computed
  // apart from this code (Python: HKDF by hmac, AES-CTR by another
  // library) from the derivation the header gives: what a second
  // implementation (the Python party) must reproduce.
  Key32 seed;
  for (size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<uint8_t>(i);
  std::vector<uint32_t> parties;
  for (uint32_t i = 1; i <= 10; ++i) parties.push_back(i);
  const NeighbourGraph g = Graph(seed, parties, 4);
  CHECK(g.ring() == std::vector<uint32_t>{10, 5, 6, 4, 8, 2, 7, 3, 9, 1});
}

TEST_CASE("the graph refuses bad arguments, naming them") {
  const Key32 seed = Hash("x");
  Refused(MakeNeighbourGraph(ByteView(seed).subspan(0, 31), Roster(10), 4),
          "seed");
  Refused(MakeNeighbourGraph(seed, {1}, 4), "parties");
  Refused(MakeNeighbourGraph(seed, {1, 2, 3, 2}, 4), "parties");
  Refused(MakeNeighbourGraph(seed, Roster(10), 3), "degree");
  Refused(MakeNeighbourGraph(seed, Roster(10), 0), "degree");
  Refused(MakeNeighbourGraph(seed, Roster(10), -2), "degree");
  const NeighbourGraph g = Graph(seed, Roster(10), 4);
  CHECK(g.Neighbours(1).status().code() == absl::StatusCode::kNotFound);
  CHECK_FALSE(g.Adjacent(1000, 1000));
  CHECK_FALSE(g.Adjacent(1000, 1));
}

struct Party {
  X25519KeyPair s;  // masking
  SelfSeed b;
  std::vector<uint32_t> q;
};

Party MakeParty(uint32_t id, size_t dim) {
  Party p;
  absl::StatusOr<X25519KeyPair> s =
      X25519KeyPairFromPrivate(Hash("s" + std::to_string(id)));
  REQUIRE(s.ok());
  p.s = *std::move(s);
  const Key32 b = Hash("b" + std::to_string(id));
  p.b = *SelfSeed::CopyOf(ByteView(b).subspan(0, kSelfSeedBytes));
  for (size_t j = 0; j < dim; ++j) p.q.push_back(id * 1000003u + j * 7919u);
  return p;
}

// Takes away from `sum` the stream of s_ud that survivor u's upload holds
// for dropped d: +PRG(s_ud) when d > u, -PRG(s_ud) when d < u.
void TakeAway(const Party& d_party, const Party& u_party, uint32_t d,
              uint32_t u, const SessionId& sid, std::vector<uint32_t>* sum) {
  absl::StatusOr<SecretKey32> key =
      PairwiseMaskKey(d_party.s.private_key, u_party.s.public_key, d, u, sid);
  REQUIRE(key.ok());
  absl::StatusOr<SecretWords> w = AesCtrWords(*key, sum->size());
  REQUIRE(w.ok());
  for (size_t j = 0; j < sum->size(); ++j)
    (*sum)[j] += d > u ? -(*w)[j] : (*w)[j];
}

// Masks restricted to the graph: MaskInput given the neighbours' public
// keys only. The pairwise streams of neighbours cancel in the sum; for a
// dropped party d the coordinator takes away, for each surviving neighbour
// u of d (not each survivor), the stream of s_ud that u's upload holds.
TEST_CASE("masks restricted to the graph cancel, with and without dropouts") {
  constexpr size_t kDim = 64;
  const std::vector<uint32_t> roster = Roster(24);
  const SessionId sid = Hash("masks session");
  const NeighbourGraph g = Graph(sid, roster, 6);
  std::map<uint32_t, Party> parties;
  for (uint32_t id : roster) parties.emplace(id, MakeParty(id, kDim));
  for (const std::set<uint32_t>& dropped :
       {std::set<uint32_t>{}, {roster[3], roster[4], roster[17]}}) {
    INFO(dropped.size() << " dropped");
    std::vector<uint32_t> sum, expected(kDim, 0);
    std::map<uint32_t, SelfSeed> seeds;
    for (const auto& [u, p] : parties) {
      if (dropped.count(u)) continue;
      std::map<uint32_t, Key32> peers;
      for (uint32_t v : Nb(g, u)) peers[v] = parties.at(v).s.public_key;
      absl::StatusOr<std::vector<uint32_t>> y =
          MaskInput(p.q, u, p.b, p.s.private_key, peers, sid);
      REQUIRE(y.ok());
      REQUIRE(AddMasked(&sum, *y).ok());
      for (size_t j = 0; j < kDim; ++j) expected[j] += p.q[j];
      seeds.emplace(u, p.b.Clone());
    }
    absl::StatusOr<std::vector<uint32_t>> out = Unmask(sum, seeds, {}, {}, sid);
    REQUIRE(out.ok());
    CHECK((*out == expected) == dropped.empty());
    for (uint32_t d : dropped)
      for (uint32_t u : Nb(g, d))
        if (!dropped.count(u))
          TakeAway(parties.at(d), parties.at(u), d, u, sid, &*out);
    CHECK(*out == expected);
  }
}

}  // namespace
}  // namespace shefl
