// The session id and the masks of secure aggregation
// (common/secure/session_id.h, common/secure/masks.h): pinned values of
// the documented derivations (computed apart from this code, from the
// layouts the headers give), masks that cancel for n = 2, 3 and 100, the
// avalanche of one flipped key bit, masked uploads that look uniform
// whatever the input, and a whole session with dropouts: keys, shares in
// share boxes, masking, three parties lost, their keys rebuilt from seven
// survivors and the exact sum recovered; with four lost, refused.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/secure/aes_ctr.h"
#include "common/secure/bytes.h"
#include "common/secure/fixed_point.h"
#include "common/secure/masks.h"
#include "common/secure/session_id.h"
#include "common/secure/sha256.h"
#include "common/secure/shamir.h"
#include "common/secure/share_box.h"
#include "common/secure/x25519.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

Key32 Hash(const std::string& s) {
  absl::StatusOr<Key32> d = Sha256(AsBytes(s));
  REQUIRE(d.ok());
  return *d;
}

// The parameters the pinned values below were computed for.
SessionParams KatParams() {
  SessionParams p;
  p.run_id = "run-2024";
  p.round = 3;
  p.model = 1;
  p.roster = {30, 10, 20};
  p.n = 3;
  p.t = 2;
  p.scale_bits = 24;
  p.clip = 0.5;
  p.support_hash = Hash("support");
  p.model_hash = Hash("model");
  return p;
}

SessionId Sid(const SessionParams& p) {
  absl::StatusOr<SessionId> sid = MakeSessionId(p);
  REQUIRE(sid.ok());
  return *sid;
}

// Deterministic keys of party `id`, so that statistics are reproducible.
struct Party {
  uint32_t id = 0;
  X25519KeyPair s;  // masking
  SelfSeed b;
};

Party MakeParty(uint32_t id) {
  Party p;
  p.id = id;
  absl::StatusOr<X25519KeyPair> s =
      X25519KeyPairFromPrivate(Hash("s" + std::to_string(id)));
  REQUIRE(s.ok());
  p.s = *std::move(s);
  const Key32 b = Hash("b" + std::to_string(id));
  p.b = *SelfSeed::CopyOf(ByteView(b).subspan(0, kSelfSeedBytes));
  return p;
}

// A map of one party's secret, for Unmask.
template <typename S>
std::map<uint32_t, S> One(uint32_t id, const S& secret) {
  std::map<uint32_t, S> m;
  m.emplace(id, secret.Clone());
  return m;
}

std::vector<std::string> WordsHex(ByteView key, size_t n) {
  absl::StatusOr<SecretWords> w = AesCtrWords(key, n);
  REQUIRE(w.ok());
  std::vector<std::string> out;
  for (uint32_t v : *w) {
    const uint8_t be[4] = {
        static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
        static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
    out.push_back(ToHex(ByteView(be, 4)));
  }
  return out;
}

TEST_CASE(
    "session id, mask keys and streams match the documented derivations") {
  const SessionParams p = KatParams();
  absl::StatusOr<Bytes> enc = EncodeSessionParams(p);
  REQUIRE(enc.ok());
  CHECK(enc->size() == 12 + 4 + 8 + 8 + 4 + 4 + 3 * 4 + 3 * 4 + 8 + 32 + 32);
  CHECK(std::string(enc->begin(), enc->begin() + 12) == "shefl sid v1");
  const SessionId sid = Sid(p);
  CHECK(ToHex(sid) ==
        "e03313045cceb88aa5776ed940b7f6676664feef8d021b2522cb04ecd48ca6a1");
  const Party u = MakeParty(10), v = MakeParty(20);
  absl::StatusOr<SecretKey32> uv =
      PairwiseMaskKey(u.s.private_key, v.s.public_key, 10, 20, sid);
  absl::StatusOr<SecretKey32> vu =
      PairwiseMaskKey(v.s.private_key, u.s.public_key, 20, 10, sid);
  REQUIRE(uv.ok());
  REQUIRE(vu.ok());
  CHECK(*uv == *vu);
  CHECK(ToHex(*uv) ==
        "ee9678f48cd64de8859920fc21b85613f273330a609fc311ab1ef92225669bfb");
  CHECK(WordsHex(*uv, 4) == std::vector<std::string>{"f2c1d77a", "736a2a21",
                                                     "c409b6d6", "384e480c"});
  absl::StatusOr<SecretKey32> self = SelfMaskKey(u.b, sid);
  REQUIRE(self.ok());
  CHECK(ToHex(*self) ==
        "1fbfab6379f2ae4fa7179b0881d2fef744d8fd496a2d7b6e30742f8746e2d6fc");
  CHECK(WordsHex(*self, 4) == std::vector<std::string>{"0c1aade5", "86c88561",
                                                       "366acc01", "b1135830"});
  absl::StatusOr<X25519KeyPair> c10 = X25519KeyPairFromPrivate(Hash("c10"));
  absl::StatusOr<X25519KeyPair> c20 = X25519KeyPairFromPrivate(Hash("c20"));
  REQUIRE(c10.ok());
  REQUIRE(c20.ok());
  absl::StatusOr<SecretKey32> box =
      ShareBoxKey(c10->private_key, c20->public_key, sid);
  REQUIRE(box.ok());
  CHECK(ToHex(*box) ==
        "b6c40ba17a83d3b78ad4814be5c9bdb3b198bc557d53be88ae20759c43f0cfc7");
}

TEST_CASE(
    "the session id covers every parameter and refuses inconsistent ones") {
  const SessionParams base = KatParams();
  const SessionId sid = Sid(base);
  SessionParams sorted = base;
  sorted.roster = {10, 20, 30};
  CHECK(Sid(sorted) == sid);  // the roster's order does not matter
  std::vector<SessionParams> changed(10, base);
  changed[0].run_id = "run-2025";
  changed[1].round = 4;
  changed[2].model = 2;
  changed[3].roster = {10, 20, 31};
  changed[4].t = 3;
  changed[5].scale_bits = 23;
  changed[6].clip = 0.25;
  changed[7].support_hash[0] ^= 1;
  changed[8].model_hash[31] ^= 0x80;
  changed[9].roster = {10, 20, 30, 40};
  changed[9].n = 4;
  std::set<SessionId> ids = {sid};
  for (const SessionParams& p : changed) ids.insert(Sid(p));
  CHECK(ids.size() == 11);
  auto refused = [](SessionParams p) { return !MakeSessionId(p).ok(); };
  SessionParams bad = base;
  bad.roster = {10, 10, 20};
  CHECK(refused(bad));
  bad = base;
  bad.n = 4;
  CHECK(refused(bad));
  bad = base;
  bad.t = 0;
  CHECK(refused(bad));
  bad.t = 4;
  CHECK(refused(bad));
  bad = base;
  bad.clip = 0;
  CHECK(refused(bad));
  bad.clip = std::nan("");
  CHECK(refused(bad));
}

// y of every party for inputs q[i], and the survivors' seeds.
std::vector<std::vector<uint32_t>> MaskAll(
    const std::vector<Party>& parties,
    const std::vector<std::vector<uint32_t>>& q, const SessionId& sid) {
  std::vector<std::vector<uint32_t>> ys;
  for (size_t i = 0; i < parties.size(); ++i) {
    std::map<uint32_t, Key32> peers;
    for (const Party& v : parties)
      if (v.id != parties[i].id) peers[v.id] = v.s.public_key;
    absl::StatusOr<std::vector<uint32_t>> y =
        MaskInput(q[i], parties[i].id, parties[i].b, parties[i].s.private_key,
                  peers, sid);
    REQUIRE(y.ok());
    ys.push_back(*y);
  }
  return ys;
}

TEST_CASE("pairwise masks cancel mod 2^32 for n = 2, 3 and 100") {
  std::mt19937_64 rng(32);
  for (uint32_t n : {2, 3, 100}) {
    INFO("n = " << n);
    std::vector<Party> parties;
    SessionParams p = KatParams();
    p.roster.clear();
    for (uint32_t i = 0; i < n; ++i) {
      parties.push_back(MakeParty(1000 - 7 * i));  // ids out of order
      p.roster.push_back(parties.back().id);
    }
    p.n = n;
    p.t = n;
    const SessionId sid = Sid(p);
    const size_t len = 257;
    for (bool zero : {true, false}) {
      std::vector<std::vector<uint32_t>> q(n, std::vector<uint32_t>(len, 0));
      std::vector<uint32_t> expected(len, 0);
      for (auto& v : q)
        for (size_t k = 0; k < len; ++k) {
          if (!zero) v[k] = static_cast<uint32_t>(rng());
          expected[k] += v[k];
        }
      const std::vector<std::vector<uint32_t>> ys = MaskAll(parties, q, sid);
      std::vector<uint32_t> sum;
      std::map<uint32_t, SelfSeed> seeds;
      for (size_t i = 0; i < n; ++i) {
        CHECK(ys[i] != q[i]);  // each upload is masked
        REQUIRE(AddMasked(&sum, ys[i]).ok());
        seeds.emplace(parties[i].id, parties[i].b.Clone());
      }
      absl::StatusOr<std::vector<uint32_t>> got =
          Unmask(sum, seeds, {}, {}, sid);
      REQUIRE(got.ok());
      CHECK(*got == expected);
    }
  }
}

double DifferingBits(const std::vector<uint32_t>& a,
                     const std::vector<uint32_t>& b) {
  uint64_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += __builtin_popcount(a[i] ^ b[i]);
  return static_cast<double>(diff) / (32.0 * a.size());
}

std::vector<uint32_t> Stream(ByteView key) {
  absl::StatusOr<SecretWords> w = AesCtrWords(key, 1 << 16);
  REQUIRE(w.ok());
  return std::vector<uint32_t>(w->begin(), w->end());
}

std::vector<uint32_t> Stream(const absl::StatusOr<SecretKey32>& key) {
  REQUIRE(key.ok());
  return Stream(ByteView(*key));
}

Key32 Flip(ByteView key, int bit) {
  Key32 k;
  std::copy(key.begin(), key.end(), k.begin());
  k[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  return k;
}

TEST_CASE("one flipped key bit changes about half the bits of a mask stream") {
  const SessionId sid = Sid(KatParams());
  const Party u = MakeParty(10), v = MakeParty(20);
  const std::vector<uint32_t> self = Stream(SelfMaskKey(u.b, sid));
  const std::vector<uint32_t> pair =
      Stream(PairwiseMaskKey(u.s.private_key, v.s.public_key, 10, 20, sid));
  auto near_half = [](double f) { return f > 0.45 && f < 0.55; };
  for (int bit : {0, 1, 63, 64, 127}) {  // the self-mask seed
    SelfSeed b = u.b.Clone();
    b.data()[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    INFO("seed bit " << bit);
    CHECK(near_half(DifferingBits(self, Stream(SelfMaskKey(b, sid)))));
  }
  // The masking private key: X25519 clamps bits 0-2, 254 and 255
  // (RFC 7748 section 5), so flipping those changes nothing by design.
  for (int bit : {3, 77, 128, 200, 253}) {
    INFO("private key bit " << bit);
    CHECK(near_half(DifferingBits(
        pair, Stream(PairwiseMaskKey(Flip(u.s.private_key, bit), v.s.public_key,
                                     10, 20, sid)))));
  }
  for (int bit : {0, 100, 255}) {  // the session id
    INFO("sid bit " << bit);
    CHECK(near_half(
        DifferingBits(self, Stream(SelfMaskKey(u.b, Flip(sid, bit))))));
    CHECK(near_half(DifferingBits(
        pair, Stream(PairwiseMaskKey(u.s.private_key, v.s.public_key, 10, 20,
                                     Flip(sid, bit))))));
  }
  absl::StatusOr<SecretKey32> key = SelfMaskKey(u.b, sid);
  REQUIRE(key.ok());
  for (int bit : {0, 128, 255}) {  // the AES key itself
    INFO("AES key bit " << bit);
    CHECK(near_half(DifferingBits(self, Stream(Flip(*key, bit)))));
  }
  // Another pair of ids gives another stream, from the same agreement.
  CHECK(near_half(DifferingBits(
      pair,
      Stream(PairwiseMaskKey(u.s.private_key, v.s.public_key, 10, 21, sid)))));
}

// Pearson's statistic of byte frequencies against uniform (255 df).
double ChiSquaredBytes(const std::vector<uint32_t>& words) {
  std::vector<double> h(256, 0);
  for (uint32_t w : words)
    for (int k = 0; k < 4; ++k) h[(w >> (8 * k)) & 0xff] += 1;
  const double e = 4.0 * words.size() / 256;
  double stat = 0;
  for (double c : h) stat += (c - e) * (c - e) / e;
  return stat;
}

// Pearson's statistic of the 2 x 256 table of the two byte histograms.
double ChiSquaredTwoSample(const std::vector<uint32_t>& a,
                           const std::vector<uint32_t>& b) {
  std::vector<double> ha(256, 0), hb(256, 0);
  for (uint32_t w : a)
    for (int k = 0; k < 4; ++k) ha[(w >> (8 * k)) & 0xff] += 1;
  for (uint32_t w : b)
    for (int k = 0; k < 4; ++k) hb[(w >> (8 * k)) & 0xff] += 1;
  const double na = 4.0 * a.size(), nb = 4.0 * b.size();
  double stat = 0;
  for (int i = 0; i < 256; ++i) {
    const double col = ha[i] + hb[i];
    const double ea = col * na / (na + nb), eb = col * nb / (na + nb);
    stat += (ha[i] - ea) * (ha[i] - ea) / ea + (hb[i] - eb) * (hb[i] - eb) / eb;
  }
  return stat;
}

// Kolmogorov-Smirnov distance of the two samples of words.
double KsDistance(std::vector<uint32_t> a, std::vector<uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
    d = std::max(d, std::fabs(static_cast<double>(i) / a.size() -
                              static_cast<double>(j) / b.size()));
  }
  return d;
}

TEST_CASE(
    "masked uploads of zeros and of maximal values look uniform and alike") {
  // Party 20 of three (it adds one pairwise stream and subtracts one), one
  // session for each upload as every round has its own. 10^6 words each.
  // The keys are fixed, so the statistics are too; the limits are the
  // 0.999 quantiles: chi-squared with 255 df 330.5, and the two-sample
  // Kolmogorov-Smirnov distance 1.95 * sqrt(2 / 10^6).
  const size_t len = 1000000;
  std::vector<Party> parties;
  for (uint32_t id : {10, 20, 30}) parties.push_back(MakeParty(id));
  std::map<uint32_t, Key32> peers = {{10, parties[0].s.public_key},
                                     {30, parties[2].s.public_key}};
  SessionParams p1 = KatParams(), p2 = KatParams();
  p2.round = 4;
  const std::vector<uint32_t> zeros(len, 0), maxima(len, 0x7fffffffu);
  absl::StatusOr<std::vector<uint32_t>> y0 = MaskInput(
      zeros, 20, parties[1].b, parties[1].s.private_key, peers, Sid(p1));
  absl::StatusOr<std::vector<uint32_t>> y1 = MaskInput(
      maxima, 20, parties[1].b, parties[1].s.private_key, peers, Sid(p2));
  REQUIRE(y0.ok());
  REQUIRE(y1.ok());
  const double kChi = 330.5;
  CHECK(ChiSquaredBytes(*y0) < kChi);
  CHECK(ChiSquaredBytes(*y1) < kChi);
  CHECK(ChiSquaredTwoSample(*y0, *y1) < kChi);
  CHECK(KsDistance(*y0, *y1) < 1.95 * std::sqrt(2.0 / len));
  // The tests see structure where there is some: the inputs themselves.
  CHECK(ChiSquaredBytes(maxima) > 1e6);
  CHECK(KsDistance(zeros, maxima) == 1.0);
  // In one session the mask is the same, added: y(max) - y(0) = max.
  absl::StatusOr<std::vector<uint32_t>> y1_same = MaskInput(
      maxima, 20, parties[1].b, parties[1].s.private_key, peers, Sid(p1));
  REQUIRE(y1_same.ok());
  CHECK((*y1_same)[0] - (*y0)[0] == 0x7fffffffu);
  CHECK((*y1_same)[len - 1] - (*y0)[len - 1] == 0x7fffffffu);
}

// One party of a whole session, with fresh random keys.
struct Member {
  uint32_t id = 0;
  uint32_t index = 0;  // in the sorted roster; its shares sit at index + 1
  X25519KeyPair c, s;
  SelfSeed b;
  std::map<uint32_t, PeerShares> held;  // from party id: its shares for me
};

// n members with fresh keys and seeds, ids first_id, first_id + step, ...,
// and the session parameters with them as the roster.
std::vector<Member> NewMembers(uint32_t n, uint32_t t, uint32_t first_id,
                               uint32_t step, SessionParams* params) {
  std::vector<Member> m(n);
  *params = KatParams();
  params->roster.clear();
  for (uint32_t i = 0; i < n; ++i) {
    m[i].id = first_id + step * i;
    m[i].index = i;
    m[i].c = *GenerateX25519KeyPair();
    m[i].s = *GenerateX25519KeyPair();
    m[i].b = *GenerateSelfSeed();
    params->roster.push_back(m[i].id);
  }
  params->n = n;
  params->t = t;
  return m;
}

// Runs the share stage of a session through share boxes: every member
// splits b and s_sk and seals each peer's shares; every peer opens its box.
void ExchangeShares(std::vector<Member>& m, uint32_t t, const SessionId& sid) {
  const uint32_t n = static_cast<uint32_t>(m.size());
  for (Member& u : m) {
    absl::StatusOr<std::vector<ShamirShare>> bs = ShamirSplit(u.b, t, n);
    absl::StatusOr<std::vector<ShamirShare>> ss =
        ShamirSplit(u.s.private_key, t, n);
    REQUIRE(bs.ok());
    REQUIRE(ss.ok());
    for (Member& v : m) {
      const PeerShares mine{(*bs)[v.index], (*ss)[v.index]};
      if (v.id == u.id) {  // kept, not sent
        v.held[u.id] = mine;
        continue;
      }
      absl::StatusOr<Bytes> box =
          SealShareBox(PackPeerShares(mine), sid, u.id, v.id, u.c.private_key,
                       v.c.public_key);
      REQUIRE(box.ok());
      REQUIRE(box->size() == 100);
      absl::StatusOr<SecretBytes> plain =
          OpenShareBox(*box, sid, u.id, v.id, v.c.private_key, u.c.public_key);
      REQUIRE(plain.ok());
      absl::StatusOr<PeerShares> got = UnpackPeerShares(*plain);
      REQUIRE(got.ok());
      REQUIRE(got->self_seed.x == v.index + 1);
      v.held[u.id] = *got;
    }
  }
}

TEST_CASE("with 3 of 10 dropped, 7 survivors' shares recover the exact sum") {
  const uint32_t n = 10, t = 7;
  const int f = 24;
  const double clip = 1.0;
  REQUIRE(CheckFixedPointConfig(n, clip, f).ok());
  SessionParams params;
  std::vector<Member> m = NewMembers(n, t, 101, 3, &params);
  params.scale_bits = f;
  params.clip = clip;
  const SessionId sid = Sid(params);
  ExchangeShares(m, t, sid);

  // Every party encodes and masks its update (keys were set up, so the
  // three that drop next did take part until now).
  std::mt19937_64 rng(10);
  std::uniform_real_distribution<float> value(-1.5f, 1.5f);  // some clipped
  const size_t dim = 300;
  std::vector<std::vector<uint32_t>> q(n), y(n);
  std::vector<std::vector<double>> sent(n);  // x - error: what q encodes
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<float> x(dim);
    for (float& v : x) v = value(rng);
    absl::StatusOr<FixedPointEncoding> e = EncodeFixedPoint(x, clip, f, rng);
    REQUIRE(e.ok());
    q[i] = e->q;
    for (size_t k = 0; k < dim; ++k)
      sent[i].push_back(static_cast<double>(x[k]) - e->error[k]);
    std::map<uint32_t, Key32> peers;
    for (const Member& v : m)
      if (v.id != m[i].id) peers[v.id] = v.s.public_key;
    absl::StatusOr<std::vector<uint32_t>> yi =
        MaskInput(q[i], m[i].id, m[i].b, m[i].s.private_key, peers, sid);
    REQUIRE(yi.ok());
    y[i] = *yi;
  }

  const std::set<uint32_t> dropped = {2, 5, 9};  // indices; uploads absent
  std::vector<uint32_t> sum, expected(dim, 0);
  std::vector<double> expected_values(dim, 0);
  std::vector<const Member*> survivors;
  for (uint32_t i = 0; i < n; ++i) {
    if (dropped.count(i)) continue;
    survivors.push_back(&m[i]);
    REQUIRE(AddMasked(&sum, y[i]).ok());
    for (size_t k = 0; k < dim; ++k) {
      expected[k] += q[i][k];
      expected_values[k] += sent[i][k];
    }
  }
  REQUIRE(survivors.size() == t);

  // Unmask stage: each survivor answers with its shares of the survivors'
  // seeds and of the dropped parties' masking keys, never both for one.
  std::map<uint32_t, SelfSeed> seeds;
  std::map<uint32_t, Key32> survivor_public;
  std::map<uint32_t, SecretKey32> dropped_private;
  for (const Member* u : survivors) {
    std::vector<ShamirShare> shares;
    for (const Member* v : survivors)
      shares.push_back(v->held.at(u->id).self_seed);
    absl::StatusOr<SecretBytes> b = ShamirReconstruct(shares, t, kSelfSeedBytes);
    REQUIRE(b.ok());
    seeds.emplace(u->id, *SelfSeed::CopyOf(*b));
    CHECK(seeds.at(u->id) == u->b);
    survivor_public[u->id] = u->s.public_key;
  }
  for (uint32_t d : dropped) {
    std::vector<ShamirShare> shares;
    for (const Member* v : survivors)
      shares.push_back(v->held.at(m[d].id).mask_private);
    absl::StatusOr<SecretBytes> sk = ShamirReconstruct(shares, t, 32);
    REQUIRE(sk.ok());
    absl::StatusOr<SecretKey32> key = SecretKey32::CopyOf(*sk);
    REQUIRE(key.ok());
    CHECK(*key == m[d].s.private_key);
    dropped_private.emplace(m[d].id, *std::move(key));
  }
  absl::StatusOr<std::vector<uint32_t>> got =
      Unmask(sum, seeds, dropped_private, survivor_public, sid);
  REQUIRE(got.ok());
  CHECK(*got == expected);
  // Without the dropped parties' keys the sum is still masked.
  absl::StatusOr<std::vector<uint32_t>> masked =
      Unmask(sum, seeds, {}, {}, sid);
  REQUIRE(masked.ok());
  CHECK(*masked != expected);
  // And it decodes to the sum of what the survivors encoded (x less the
  // error each kept), up to float precision.
  absl::StatusOr<std::vector<float>> decoded = DecodeFixedPoint(*got, f);
  REQUIRE(decoded.ok());
  for (size_t k = 0; k < dim; ++k)
    CHECK(std::fabs((*decoded)[k] - expected_values[k]) < 1e-5);
}

TEST_CASE("with 4 of 10 dropped, 6 survivors cannot rebuild a key") {
  const uint32_t n = 10, t = 7;
  SessionParams params;
  std::vector<Member> m = NewMembers(n, t, 201, 1, &params);
  const SessionId sid = Sid(params);
  ExchangeShares(m, t, sid);
  const std::set<uint32_t> dropped = {0, 3, 4, 8};
  std::vector<ShamirShare> key_shares, seed_shares;
  for (uint32_t i = 0; i < n; ++i) {
    if (dropped.count(i)) continue;
    key_shares.push_back(m[i].held.at(m[0].id).mask_private);
    seed_shares.push_back(m[i].held.at(m[1].id).self_seed);
  }
  REQUIRE(key_shares.size() == 6);
  CHECK(ShamirReconstruct(key_shares, t, 32).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(ShamirReconstruct(seed_shares, t, kSelfSeedBytes).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("masking and unmasking refuse inconsistent party sets") {
  const SessionId sid = Sid(KatParams());
  const Party u = MakeParty(10), v = MakeParty(20);
  const std::vector<uint32_t> q(8, 1);
  CHECK_FALSE(MaskInput(q, 10, u.b, u.s.private_key,
                        {{10, u.s.public_key}, {20, v.s.public_key}}, sid)
                  .ok());
  CHECK_FALSE(
      PairwiseMaskKey(u.s.private_key, v.s.public_key, 10, 10, sid).ok());
  // A party both survivor and dropped; public keys of other parties.
  CHECK_FALSE(Unmask(q, One(10, u.b), One(10, u.s.private_key),
                     {{10, u.s.public_key}}, sid)
                  .ok());
  CHECK_FALSE(Unmask(q, One(10, u.b), One(20, v.s.private_key),
                     {{30, u.s.public_key}}, sid)
                  .ok());
  std::vector<uint32_t> sum;
  REQUIRE(AddMasked(&sum, q).ok());
  CHECK_FALSE(AddMasked(&sum, std::vector<uint32_t>(7, 0)).ok());
}

}  // namespace
}  // namespace shefl
