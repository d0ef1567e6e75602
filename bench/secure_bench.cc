// Secure aggregation's cost (common/secure/): one session of n parties for
// one model, with K words each, and 0% or 30% of the parties dropped after
// the shares (their masking keys rebuilt); above 200 parties both all pairs
// and SecAgg+ (the neighbour graph the finder gives for 1/3 colluding and
// 1/3 dropped; common/secure/secagg_plus_params.h). Prints, per (n, shape,
// K, dropped):
//   party ms      one party's CPU time: keys, the n - 1 share boxes, the
//                 boxes it takes, its masked input, its unmasking reply
//                 (median over the parties timed);
//   collector ms  the coordinator's: roster, box routing, the masked sum,
//                 reconstruction and removal of the masks;
//   party up/down what a party sends and receives, as docs/DESIGN.md's
//                 "Secure aggregation" counts it (BytesOf below), the
//                 upload against a plain fp32 top-k upload of the same K
//                 on the model of d weights (index codec).
// Usage: build/bin/secure_bench [--bytes-only] [--graph-only] [N ...]
// (default 10 100; 1000 takes minutes; --bytes-only prints the bytes alone,
// without running a session, for n as large as 10,000; --graph-only skips
// the all-pairs sessions where a graph is used). Medians of 3 sessions (of 1 at
// n >= 1,000). d = 582,026 (the paper's CNN); K at 1% and 10% of d.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/secure/collector.h"
#include "common/secure/party.h"
#include "common/secure/secagg_plus_params.h"
#include "common/sparse/codec.h"

namespace shefl {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr uint64_t kDim = 582026;
constexpr uint32_t kGraphAbove = 200;
constexpr double kBadFraction = 1.0 / 3;  // colluding, and dropped

struct Figures {
  double party_ms = 0, collector_ms = 0;
};

// One session. Parties time their own work; at n >= 300 only every tenth
// party masks for real (the masked sum is then not the true sum, but the
// collector's work does not depend on the values).
Figures Session(uint32_t n, uint64_t k, bool drop, bool graph) {
  CollectorSettings s;
  s.graph_above = graph ? kGraphAbove : 0;
  s.collude_fraction = s.dropout_fraction = kBadFraction;
  s.params.run_id = "bench";
  s.params.round = 1;
  s.params.scale_bits = 24;
  s.params.clip = 0.05;
  s.min_parties = 2;
  s.words = k;
  SecureCollector collector(s);
  std::vector<std::unique_ptr<SecureParty>> parties;
  std::vector<double> own(n, 0.0);
  for (uint32_t i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    parties.push_back(*SecureParty::Create(i));
    own[i] += Ms(t0, Clock::now());
  }
  double coll = 0;
  auto t0 = Clock::now();
  for (auto& p : parties) (void)collector.AddAdvert(p->Advert());
  const Roster roster = *collector.CloseAdverts();
  coll += Ms(t0, Clock::now());
  for (uint32_t i = 0; i < n; ++i) {
    t0 = Clock::now();
    auto boxes = *parties[i]->ShareBoxes(roster);
    own[i] += Ms(t0, Clock::now());
    t0 = Clock::now();
    (void)collector.AddBoxes(i, std::move(boxes));
    coll += Ms(t0, Clock::now());
  }
  t0 = Clock::now();
  (void)collector.CloseShares();
  coll += Ms(t0, Clock::now());
  const uint32_t dropped = drop ? n * 3 / 10 : 0;
  std::mt19937_64 rng(n);
  std::vector<uint32_t> q(k);
  std::vector<uint32_t> timed;
  for (uint32_t i = dropped; i < n; ++i) {
    for (uint32_t& w : q) w = static_cast<uint32_t>(rng());
    t0 = Clock::now();
    auto boxes = collector.BoxesFor(i);
    coll += Ms(t0, Clock::now());
    t0 = Clock::now();
    (void)parties[i]->TakeBoxes(boxes);
    MaskedInput in;
    if (n < 300 || i % 10 == 0) {
      in = *parties[i]->Mask(q, 1.0);
      timed.push_back(i);
    } else {
      (void)parties[i]->Mask(std::vector<uint32_t>(1), 1.0);  // cheap stand-in
      in = MaskedInput{i, 1.0, q};
    }
    own[i] += Ms(t0, Clock::now());
    t0 = Clock::now();
    (void)collector.AddInput(in);
    coll += Ms(t0, Clock::now());
  }
  t0 = Clock::now();
  const UnmaskRequest request = *collector.CloseInputs();
  coll += Ms(t0, Clock::now());
  for (uint32_t i = dropped; i < n; ++i) {
    t0 = Clock::now();
    auto reply = parties[i]->Unmask(request);
    own[i] += Ms(t0, Clock::now());
    if (!reply.ok()) std::abort();
    t0 = Clock::now();
    (void)collector.AddReply(*reply);
    coll += Ms(t0, Clock::now());
  }
  t0 = Clock::now();
  auto sum = collector.Finish();
  coll += Ms(t0, Clock::now());
  if (!sum.ok()) {
    std::fprintf(stderr, "session failed: %s\n", std::string(sum.status().message()).c_str());
    std::exit(1);
  }
  std::vector<double> party;
  for (uint32_t i : timed) party.push_back(own[i]);
  return {bench::Median(party), coll};
}

// Bytes one surviving party sends (up) and receives (down), by the
// design's counts: up, its keys (64), a box a peer (100), its input
// (4K + 16) and its reply's shares (28 a survivor's seed, 44 a dropped
// key); down, the support in the index codec, the roster (68 a party), a
// box a peer and the request (4 a party named). A peer is every other
// party, or one of the `degree` neighbours of a graph, of which the
// dropped share is the roster's on average.
struct PartyBytes {
  double up = 0, down = 0;
};

PartyBytes BytesOf(uint32_t n, uint64_t k, bool drop, double support,
                   uint32_t degree) {
  const double dropped = drop ? n * 3 / 10 : 0;
  const double peers = degree > 0 ? degree : n - 1.0;
  const double gone = dropped * peers / (n - 1.0);
  PartyBytes b;
  b.up = 64 + 100.0 * peers + (4.0 * k + 16) + 28.0 * (peers + 1 - gone) + 44.0 * gone;
  b.down = support + 68.0 * n + 100.0 * peers + 4.0 * n;
  return b;
}

// The degree a session of n parties takes with SecAgg+ (0: all pairs).
uint32_t GraphDegree(uint32_t n) {
  if (n <= kGraphAbove) return 0;
  const auto g = FindGraphParams(n, kBadFraction, kBadFraction, 40, 20, true);
  return g.ok() && !g->complete() ? static_cast<uint32_t>(g->degree) : 0;
}

// A plain fp32 top-k upload of k random coordinates, and its index part
// alone (what the support costs in the same codec).
std::vector<uint32_t> RandomIndices(uint64_t k) {
  std::mt19937_64 rng(1);
  std::vector<uint32_t> all(kDim);
  for (uint32_t i = 0; i < kDim; ++i) all[i] = i;
  for (uint64_t i = 0; i < k; ++i) std::swap(all[i], all[i + rng() % (kDim - i)]);
  std::vector<uint32_t> idx(all.begin(), all.begin() + static_cast<int64_t>(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace
}  // namespace shefl

int main(int argc, char** argv) {
  using namespace shefl;
  const char* usage =
      "usage: secure_bench [--bytes-only] [--graph-only] [N ...]   (parties; "
      "default 10 100)\n";
  bool bytes_only = false, graph_only = false;
  const auto bare = [](bool* on) {
    return [on](const char* v) {
      *on = true;
      return v == nullptr;  // a bare switch
    };
  };
  const bench::BenchArgs args = bench::ParseBenchArgs(
      argc, argv, usage,
      {{"--bytes-only", bare(&bytes_only)}, {"--graph-only", bare(&graph_only)}});
  if (args.exit_code >= 0) return args.exit_code;
  std::vector<uint32_t> ns;
  for (size_t i = 0; i < args.positional.size(); ++i)
    ns.push_back(static_cast<uint32_t>(args.IntArg(i, 0)));
  if (ns.empty()) ns = {10, 100};
  std::printf("| n | shape | K | dropped | party ms | collector ms | party up B "
              "| party down B | plain top-k up B | up ratio |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (uint32_t n : ns)
    for (bool graph : {false, true}) {
      const uint32_t degree = graph ? GraphDegree(n) : 0;
      if (graph && degree == 0) continue;  // all pairs anyway
      if (!graph && graph_only && GraphDegree(n) > 0) continue;
      const std::string shape =
          graph ? "k = " + std::to_string(degree) : std::string("all pairs");
      for (uint64_t k : {kDim / 100, kDim / 10})
        for (bool drop : {false, true}) {
          std::vector<double> p, c;
          for (int rep = 0; !bytes_only && rep < (n >= 1000 ? 1 : 3); ++rep) {
            const Figures f = Session(n, k, drop, graph);
            p.push_back(f.party_ms);
            c.push_back(f.collector_ms);
          }
          const std::vector<uint32_t> idx = RandomIndices(k);
          const double plain =
              static_cast<double>(PredictEncodedSize(kDim, idx, ValueType::kFp32));
          const PartyBytes b =
              BytesOf(n, k, drop, plain - 4.0 * static_cast<double>(k), degree);
          const auto ms = [&](const std::vector<double>& v) {
            if (v.empty()) return std::string("-");
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.1f", bench::Median(v));
            return std::string(buf);
          };
          std::printf("| %u | %s | %llu | %s | %s | %s | %.0f | %.0f | %.0f | %.2fx |\n", n,
                      shape.c_str(), static_cast<unsigned long long>(k),
                      drop ? "30%" : "0%", ms(p).c_str(), ms(c).c_str(), b.up, b.down,
                      plain, b.up / plain);
          std::fflush(stdout);
        }
    }
  return 0;
}
