// The hostile-upload campaign (docs/SECURITY.md): one real coordinator on
// 127.0.0.1, the test as its daemon over real gRPC. More than 10,000
// uploads drawn from a seeded RNG, cycling over every way docs/DESIGN.md
// ("Trust and faults") says an update is refused, are sent from several
// connections at once while a round is open; each must be refused with the
// right gRPC code and message, the refusal counters must match what was sent
// reason by reason, no model and no booked byte may change, and the process's
// memory must stay bounded. Then 1,000 good uploads over further rounds must
// all be accepted and the run must finish.
//
// Two hostile values are not refusals by design and are checked as such:
// a header's num_samples (the weight is the registered shard size, so a
// claim of 2^64-1 must not move it) and 3.4e38, a finite fp32 value (a
// fresh pair's update carrying it is accepted; identity_test shows an
// overflowing aggregate is never published). Here 3.4e38 rides on uploads
// refused for another reason, so that a side door would wreck a model.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/sync_stream.h>
#include <malloc.h>
#include <prometheus/metric_family.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>

#include "common/sparse/varint.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using Rng = std::mt19937_64;
using Code = grpc::StatusCode;

constexpr uint64_t kSeed = 0x5EF1'0007;
constexpr int kCohort = 25;         // 10 HPCs and 15 LPCs a round
constexpr int kPairsPerRound = 45;  // 10 x 3 models + 15 x 1
constexpr int kGoodRounds = 23;     // 23 x 45 = 1,035 good uploads
constexpr int kRounds = 2 + kGoodRounds;
constexpr int kPerKind = 450;  // x 23 kinds = 10,350 hostile uploads
constexpr int kThreads = 4;
// Memory bounds of the campaign, in one malloc arena (see the test): at
// its peak, with streams in flight; what stays after it; and what its
// second half adds, which would be some 5 MiB for 1 KiB kept per refusal.
constexpr double kMaxPeakGrowthMiB = 64;
constexpr double kMaxGrowthMiB = 32;
constexpr double kMaxSecondHalfMiB = 4;

// 40 clients so that a round has 45 pairs: the good phase needs only 23
// rounds. Rounds close when every pair has answered; the deadline is a
// backstop for a loaded machine.
std::string Config() {
  return "rounds: " + std::to_string(kRounds) +
         "\nround_deadline_s: 300\n"
         "clients: {num_clients: 40, num_hpc: 20, per_round_hpc: 10, "
         "per_round_lpc: 15}\n"
         "aggregation: {weight_by_samples: true}\n";
}

// ---- random numbers -------------------------------------------------------

uint64_t Uniform(Rng& r, uint64_t lo, uint64_t hi) {
  return std::uniform_int_distribution<uint64_t>(lo, hi)(r);
}

// At least `lo`, its magnitude spread evenly over the bit widths up to 64,
// so that 2^63 and 2^64-1 come up as often as small values.
uint64_t Wide(Rng& r, uint64_t lo) {
  const int lo_bits = 64 - __builtin_clzll(lo | 1);
  const int bits = static_cast<int>(Uniform(r, lo_bits, 64));
  const uint64_t hi = bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
  return Uniform(r, lo, std::max(lo, hi));
}

// m distinct indices of [0, d), ascending.
std::vector<uint32_t> RandomIndices(Rng& r, uint64_t d, uint64_t m) {
  std::vector<uint32_t> all(d);
  std::iota(all.begin(), all.end(), 0u);
  for (uint64_t i = 0; i < m; ++i) std::swap(all[i], all[Uniform(r, i, d - 1)]);
  all.resize(m);
  std::sort(all.begin(), all.end());
  return all;
}

SparseDelta RandomDelta(Rng& r, uint64_t d, uint64_t m) {
  SparseDelta delta;
  delta.dim = d;
  delta.indices = RandomIndices(r, d, m);
  std::uniform_real_distribution<float> v(-0.01f, 0.01f);
  for (uint64_t i = 0; i < m; ++i) delta.values.push_back(v(r));
  return delta;
}

// ---- the round under attack ----------------------------------------------

struct PairRef {
  int64_t client = 0, model = 0;
  uint64_t version = 0, k = 0, round = 0;
};

struct Target {
  std::string session;
  uint64_t d = 0, round = 0;
  int64_t num_models = 0, num_clients = 0;
  std::vector<PairRef> fresh;       // assigned this round, not uploaded yet
  PairRef done;                     // assigned this round and accepted
  std::vector<PairRef> past;        // the previous round's pairs
  std::vector<PairRef> unassigned;  // hosted clients, models not theirs
  // What the coordinator lets an upload of budget k declare (fp32 runs).
  uint64_t Limit(const PairRef& p) const {
    return PredictEncodedSizeUpperBound(d, p.k, ValueType::kFp32);
  }
};

std::vector<PairRef> PairsOf(const std::vector<v1::Task>& tasks) {
  std::vector<PairRef> out;
  for (const auto& t : tasks)
    for (const auto& mt : t.models())
      out.push_back({static_cast<int64_t>(t.client_id()),
                     static_cast<int64_t>(mt.model_id()), mt.model_version(),
                     mt.k(), t.round()});
  return out;
}

const PairRef& Pick(const std::vector<PairRef>& v, Rng& r) {
  return v[Uniform(r, 0, v.size() - 1)];
}

// ---- one hostile upload ---------------------------------------------------

struct Attack {
  Code code = Code::OK;  // expected
  std::string reason;    // expected label of shefl_refusals_total
  std::string word;      // expected in the status message
  std::vector<v1::DeltaChunk> chunks;
  std::string raw;  // when set: this one undecodable message instead
  // Whether the refusal counts in the open round's record: not for a
  // stream that never named a session of its caller's (/metrics only).
  bool in_round = true;
};

Attack Expect(Code code, const std::string& reason, const std::string& word) {
  Attack a;
  a.code = code;
  a.reason = reason;
  a.word = word;
  return a;
}

// A header for pair p of size `size`; every hostile header claims some
// number of samples, up to 2^64-1, and an arbitrary training loss.
v1::UploadHeader Head(const Target& t, const PairRef& p, uint64_t size,
                      Rng& r) {
  v1::UploadHeader h;
  h.set_session_id(t.session);
  h.set_round(p.round);
  h.set_client_id(static_cast<uint32_t>(p.client));
  h.set_model_id(static_cast<uint32_t>(p.model));
  h.set_model_version(p.version);
  h.set_encoded_size(size);
  h.set_num_samples(Wide(r, 0));
  const double losses[] = {0.5, std::nan(""), HUGE_VAL, -1e308};
  h.set_train_loss(losses[Uniform(r, 0, 3)]);
  return h;
}

// `bytes` cut into 1-4 non-empty pieces at random, the header on the first.
std::vector<v1::DeltaChunk> Chunks(const v1::UploadHeader& h,
                                   const std::string& bytes, Rng& r) {
  std::vector<size_t> cuts = {0, bytes.size()};
  for (int i = 0, n = static_cast<int>(Uniform(r, 0, 3));
       i < n && bytes.size() > 1; ++i)
    cuts.push_back(Uniform(r, 1, bytes.size() - 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<v1::DeltaChunk> out(1);
  *out[0].mutable_header() = h;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (i > 0) out.emplace_back();
    out.back().set_data(bytes.substr(cuts[i], cuts[i + 1] - cuts[i]));
  }
  return out;
}

void Send(Attack& a, const Target& t, const PairRef& p,
          const std::string& bytes, Rng& r, uint64_t declared) {
  a.chunks = Chunks(Head(t, p, declared, r), bytes, r);
}
void Send(Attack& a, const Target& t, const PairRef& p,
          const std::string& bytes, Rng& r) {
  Send(a, t, p, bytes, r, bytes.size());
}

// A valid encoding of 1..k random entries for p.
std::string ValidBlob(Rng& r, const Target& t, const PairRef& p,
                      ValueType vt = ValueType::kFp32) {
  return *EncodeSparseDelta(RandomDelta(r, t.d, Uniform(r, 1, p.k)), vt);
}

// ---- hand-made codec bytes (the encoder would refuse them) ----------------

void PutVar(std::string* s, uint64_t v) {
  uint8_t buf[10];
  const uint8_t* end = PutVarint(buf, v);
  s->append(reinterpret_cast<const char*>(buf), end - buf);
}

std::string CodecHead(IndexFormat fmt, uint64_t d, uint64_t k) {
  std::string s;
  s.push_back(static_cast<char>(kCodecMagicVersion));
  s.push_back(0);  // fp32
  s.push_back(static_cast<char>(fmt));
  PutVar(&s, d);
  PutVar(&s, k);
  return s;
}

void PutFloats(std::string* s, size_t n, float v) {
  for (size_t i = 0; i < n; ++i)
    s->append(reinterpret_cast<const char*>(&v), 4);
}

// Varint gaps taken as given, then one fp32 value per gap.
std::string GapBlob(uint64_t d, const std::vector<uint64_t>& gaps) {
  std::string s = CodecHead(IndexFormat::kVarintGaps, d, gaps.size());
  for (uint64_t g : gaps) PutVar(&s, g);
  PutFloats(&s, gaps.size(), 0.25f);
  return s;
}

std::vector<uint64_t> Gaps(const std::vector<uint32_t>& idx) {
  std::vector<uint64_t> g;
  for (size_t i = 0; i < idx.size(); ++i)
    g.push_back(i == 0 ? idx[0] : uint64_t{idx[i]} - idx[i - 1] - 1);
  return g;
}

// ---- the kinds of hostile upload ------------------------------------------

// An index at or past d, as a varint gap or as a bitmap bit past the end.
Attack OutOfRange(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "bad_delta", "out of range");
  const PairRef& p = Pick(t.fresh, r);
  if (t.d % 8 != 0 && Uniform(r, 0, 2) == 0) {
    std::string bitmap((t.d + 7) / 8, '\0');
    for (uint32_t i : RandomIndices(r, t.d, Uniform(r, 0, p.k / 2)))
      bitmap[i / 8] |= static_cast<char>(1 << (i % 8));
    bitmap.back() |= static_cast<char>(0x80);  // bit 8*bytes-1 >= d
    uint64_t k = 0;
    for (char c : bitmap) k += __builtin_popcount(static_cast<uint8_t>(c));
    std::string s = CodecHead(IndexFormat::kBitmap, t.d, k) + bitmap;
    PutFloats(&s, k, 0.25f);
    if (s.size() <= t.Limit(p)) return Send(a, t, p, s, r), a;
  }
  std::vector<uint32_t> idx =
      RandomIndices(r, t.d, Uniform(r, 1, std::min<uint64_t>(p.k, 32)));
  std::vector<uint64_t> gaps = Gaps(idx);
  const size_t j = Uniform(r, 0, idx.size() - 1);
  const uint64_t next = j == 0 ? 0 : uint64_t{idx[j - 1]} + 1;
  gaps[j] = Uniform(r, t.d, UINT32_MAX) - next;  // index in [d, 2^32)
  Send(a, t, p, GapBlob(t.d, gaps), r);
  return a;
}

// Indices out of order: the gaps are unsigned, so a descending index can
// only be asked for by a gap that wraps past 2^32, or one too wide for 32
// bits; a decoder doing uint32 arithmetic would take either.
Attack Unsorted(const Target& t, Rng& r) {
  const PairRef& p = Pick(t.fresh, r);
  std::vector<uint32_t> idx = RandomIndices(
      r, t.d,
      Uniform(r, 2, std::min<uint64_t>(std::max<uint64_t>(p.k / 2, 2), 32)));
  std::vector<uint64_t> gaps = Gaps(idx);
  const size_t j = Uniform(r, 1, idx.size() - 1);
  const uint64_t prev = idx[j - 1];
  Attack a;
  if (Uniform(r, 0, 1)) {
    a = Expect(Code::INVALID_ARGUMENT, "bad_delta", "out of range");
    gaps[j] = (uint64_t{1} << 32) + Uniform(r, 0, prev) - prev - 1;
  } else {
    a = Expect(Code::INVALID_ARGUMENT, "bad_delta", "varint overflow");
    gaps[j] = Wide(r, uint64_t{1} << 32);
  }
  Send(a, t, p, GapBlob(t.d, gaps), r);
  return a;
}

// One value NaN or +-Inf, in fp32, fp16 or bf16.
Attack NanInf(const Target& t, Rng& r) {
  const PairRef& p = Pick(t.fresh, r);
  const ValueType vt = static_cast<ValueType>(Uniform(r, 0, 2));
  std::string s = ValidBlob(r, t, p, vt);
  const bool nan = Uniform(r, 0, 1);
  Attack a = Expect(Code::INVALID_ARGUMENT, "bad_delta", nan ? "NaN" : "Inf");
  const uint64_t w = ValueTypeBytes(vt);
  uint32_t bits =
      nan ? 0x7fc00000u : 0x7f800000u;  // fp32; bf16 is its top half
  if (vt == ValueType::kFp16)
    bits = nan ? 0x7e00u : 0x7c00u;
  else if (vt == ValueType::kBf16)
    bits >>= 16;
  if (!nan && Uniform(r, 0, 1)) bits |= w == 4 ? 0x80000000u : 0x8000u;  // -Inf
  // The values are the last section: count back from the end.
  const SparseDelta back = *DecodeSparseDelta(s, t.d, p.k);
  const uint64_t pos = Uniform(r, 0, back.nnz() - 1);
  std::memcpy(&s[s.size() - (back.nnz() - pos) * w], &bits, w);
  Send(a, t, p, s, r);
  return a;
}

// k above the budget in fewer bytes than the budget allows (adjacent
// indices, fp16 values): it passes the size check, so k itself must be
// checked against the budget.
Attack OverBudget(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "over_budget", "budget");
  const PairRef& p = Pick(t.fresh, r);
  for (uint64_t extra = Uniform(r, 1, std::max<uint64_t>(1, p.k / 4));;
       extra = (extra + 1) / 2) {
    const uint64_t m = std::min<uint64_t>(p.k + extra, t.d);
    SparseDelta delta;
    delta.dim = t.d;
    const uint64_t start = Uniform(r, 0, t.d - m);
    for (uint64_t i = 0; i < m; ++i) {
      delta.indices.push_back(static_cast<uint32_t>(start + i));
      delta.values.push_back(0.001f);
    }
    std::string s = *EncodeSparseDelta(delta, ValueType::kFp16);
    if (s.size() <= t.Limit(p) || extra == 1) return Send(a, t, p, s, r), a;
  }
}

// Fewer bytes arrive than the header declared.
Attack TruncatedStream(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "truncated upload");
  const PairRef& p = Pick(t.fresh, r);
  const std::string s = ValidBlob(r, t, p);
  Send(a, t, p, s.substr(0, Uniform(r, 0, s.size() - 1)), r, s.size());
  return a;
}

// The declared size arrives, but it is a valid delta cut short.
Attack TruncatedDelta(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "bad_delta", "truncated");
  const PairRef& p = Pick(t.fresh, r);
  const std::string s = ValidBlob(r, t, p);
  Send(a, t, p, s.substr(0, Uniform(r, 0, s.size() - 1)), r);
  return a;
}

// A declared size above what the budget allows, up to 2^64-1.
Attack OversizeDeclared(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "oversize", "oversize");
  const PairRef& p = Pick(t.fresh, r);
  const std::string s = ValidBlob(r, t, p).substr(0, Uniform(r, 0, 64));
  Send(a, t, p, s, r, Wide(r, t.Limit(p) + 1));
  return a;
}

// More bytes than declared: in the first chunk (a quarter of them 1-2 MiB,
// for the memory bound) or in one chunk after the last.
Attack OversizeStream(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "oversize", "oversize");
  const PairRef& p = Pick(t.fresh, r);
  const std::string s = ValidBlob(r, t, p);
  if (Uniform(r, 0, 1)) {
    const uint64_t extra = Uniform(r, 0, 3) == 0 ? Uniform(r, 1 << 20, 2 << 20)
                                                 : Uniform(r, 1, 100);
    a.chunks.resize(1);
    *a.chunks[0].mutable_header() = Head(t, p, s.size(), r);
    a.chunks[0].set_data(s + std::string(extra, '\x5a'));
  } else {
    Send(a, t, p, s, r);
    a.chunks.emplace_back().set_data(std::string(Uniform(r, 1, 64), '\x5a'));
  }
  return a;
}

// Part of a delta, then hundreds of empty chunks: a peer that would hold
// a handler open without sending bytes.
Attack EmptyChunkFlood(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "empty chunk");
  const PairRef& p = Pick(t.fresh, r);
  const std::string s = ValidBlob(r, t, p);
  Send(a, t, p, s.substr(0, Uniform(r, 0, s.size() - 1)), r, s.size());
  a.chunks.resize(a.chunks.size() + Uniform(r, 50, 400));
  return a;
}

Attack NoHeader(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "no header");
  a.in_round = false;
  const std::string s = ValidBlob(r, t, Pick(t.fresh, r));
  a.chunks.resize(Uniform(r, 1, 3));
  if (Uniform(r, 0, 1)) a.chunks[0].set_data(s);
  return a;
}

Attack RepeatedHeader(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "header repeated");
  const PairRef& p = Pick(t.fresh, r);
  const std::string s = ValidBlob(r, t, p);
  const size_t cut = Uniform(r, 0, s.size() - 1);
  Send(a, t, p, s.substr(0, cut), r, s.size());
  v1::DeltaChunk& again = a.chunks.emplace_back();
  *again.mutable_header() = Head(t, p, s.size(), r);
  again.set_data(s.substr(cut));
  return a;
}

Attack EmptyStream(const Target&, Rng&) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "empty stream");
  a.in_round = false;
  return a;
}

// Random bytes of a size the budget allows.
Attack GarbageBlob(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "bad_delta", "sparse delta");
  const PairRef& p = Pick(t.fresh, r);
  std::string s(Uniform(r, 1, t.Limit(p)), '\0');
  for (char& c : s) c = static_cast<char>(r());
  Send(a, t, p, s, r);
  return a;
}

// Bytes that are not a DeltaChunk at all: an invalid wire type, or a real
// chunk whose session id is not UTF-8 (proto3 strings must be).
Attack GarbageMessage(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "empty stream");
  a.in_round = false;
  if (Uniform(r, 0, 1)) {
    a.raw.push_back(static_cast<char>((Uniform(r, 1, 15) << 3) | 7));
    for (uint64_t i = Uniform(r, 0, 200); i > 0; --i)
      a.raw.push_back(static_cast<char>(r()));
  } else {
    const PairRef& p = Pick(t.fresh, r);
    const std::string s = ValidBlob(r, t, p);
    a.raw = Chunks(Head(t, p, s.size(), r), s, r)[0].SerializeAsString();
    // Patched after serializing, which would refuse to write bad UTF-8.
    a.raw.replace(a.raw.find(t.session), 2, "\xff\xfe");
  }
  return a;
}

// A model id that does not exist, up to 2^32-1.
Attack WrongModel(const Target& t, Rng& r) {
  Attack a = Expect(Code::PERMISSION_DENIED, "not_assigned", "not assigned");
  PairRef p = Pick(t.fresh, r);
  p.model = static_cast<int64_t>(Uniform(r, t.num_models, UINT32_MAX));
  Send(a, t, p, ValidBlob(r, t, p), r);
  return a;
}

// A hosted client and a real model, not assigned together this round.
Attack NotAssigned(const Target& t, Rng& r) {
  Attack a = Expect(Code::PERMISSION_DENIED, "not_assigned", "not assigned");
  const PairRef& p = Pick(t.unassigned, r);
  Send(a, t, p, ValidBlob(r, t, p), r);
  return a;
}

Attack PastRound(const Target& t, Rng& r) {
  Attack a = Expect(Code::FAILED_PRECONDITION, "late", "late");
  PairRef p = Pick(t.past, r);
  p.round = Uniform(r, 0, t.round - 1);
  Send(a, t, p, ValidBlob(r, t, p), r);
  return a;
}

// A round not yet started, up to 2^64-1 (2^63 and above included: read
// as a signed number they would look like the past).
Attack FutureRound(const Target& t, Rng& r) {
  Attack a = Expect(Code::INVALID_ARGUMENT, "malformed", "not started");
  PairRef p = Pick(t.fresh, r);
  p.round = Uniform(r, 0, 3) == 0 ? Uniform(r, uint64_t{1} << 63, UINT64_MAX)
                                  : Wide(r, t.round + 1);
  Send(a, t, p, ValidBlob(r, t, p), r);
  return a;
}

Attack WrongVersion(const Target& t, Rng& r) {
  Attack a = Expect(Code::FAILED_PRECONDITION, "stale", "stale");
  PairRef p = Pick(t.fresh, r);
  p.version += Uniform(r, 1, UINT64_MAX);  // wraps; never 0 apart
  Send(a, t, p, ValidBlob(r, t, p), r);
  return a;
}

Attack Duplicate(const Target& t, Rng& r) {
  Attack a = Expect(Code::ALREADY_EXISTS, "duplicate", "duplicate");
  Send(a, t, t.done, ValidBlob(r, t, t.done), r);
  return a;
}

Attack NotOwner(const Target& t, Rng& r) {
  Attack a = Expect(Code::PERMISSION_DENIED, "not_owner", "does not host");
  PairRef p = Pick(t.fresh, r);
  p.client = static_cast<int64_t>(Uniform(r, t.num_clients, UINT32_MAX));
  Send(a, t, p, ValidBlob(r, t, p), r);
  return a;
}

Attack UnknownSession(const Target& t, Rng& r) {
  Attack a =
      Expect(Code::UNAUTHENTICATED, "unauthenticated", "unknown session");
  a.in_round = false;
  const PairRef& p = Pick(t.fresh, r);
  Target forged = t;
  forged.session.clear();
  for (uint64_t i = Uniform(r, 0, 1) ? 32 : Uniform(r, 0, 300); i > 0; --i)
    forged.session.push_back("0123456789abcdef"[r() % 16]);
  Send(a, forged, p, ValidBlob(r, t, p), r);
  return a;
}

// Every value +-3.4e38 or +-FLT_MAX, on an upload with a pair-level fault.
Attack MaxFloat(const Target& t, Rng& r) {
  const int fault = static_cast<int>(Uniform(r, 0, 3));
  PairRef p = fault == 0   ? t.done
              : fault == 2 ? Pick(t.past, r)
                           : Pick(t.fresh, r);
  Attack a = fault == 0 ? Expect(Code::ALREADY_EXISTS, "duplicate", "duplicate")
             : fault == 1 ? Expect(Code::FAILED_PRECONDITION, "stale", "stale")
             : fault == 2 ? Expect(Code::FAILED_PRECONDITION, "late", "late")
                          : Expect(Code::PERMISSION_DENIED, "not_assigned",
                                   "not assigned");
  if (fault == 1) p.version += 1;
  if (fault == 3) p.model = t.num_models;
  SparseDelta delta = RandomDelta(r, t.d, Uniform(r, 1, p.k));
  const float huge[] = {3.4e38f, -3.4e38f, FLT_MAX, -FLT_MAX};
  for (float& v : delta.values) v = huge[Uniform(r, 0, 3)];
  Send(a, t, p, *EncodeSparseDelta(delta, ValueType::kFp32), r);
  return a;
}

struct Kind {
  const char* name;
  Attack (*make)(const Target&, Rng&);
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"index_out_of_range", OutOfRange},
      {"unsorted_indices", Unsorted},
      {"nan_inf_value", NanInf},
      {"max_float_3.4e38", MaxFloat},
      {"k_over_budget", OverBudget},
      {"truncated_stream", TruncatedStream},
      {"truncated_delta", TruncatedDelta},
      {"oversize_declared", OversizeDeclared},
      {"oversize_stream", OversizeStream},
      {"empty_chunk_flood", EmptyChunkFlood},
      {"no_header", NoHeader},
      {"repeated_header", RepeatedHeader},
      {"empty_stream", EmptyStream},
      {"garbage_blob", GarbageBlob},
      {"garbage_message", GarbageMessage},
      {"wrong_model", WrongModel},
      {"not_assigned", NotAssigned},
      {"past_round", PastRound},
      {"future_round", FutureRound},
      {"wrong_version", WrongVersion},
      {"duplicate", Duplicate},
      {"not_owner", NotOwner},
      {"unknown_session", UnknownSession},
  };
  return kinds;
}

// Upload i: kind i mod kinds, its details from its own seed, so the
// campaign is the same whatever thread sends what.
Attack MakeAttack(const Target& t, int i) {
  std::seed_seq seq{kSeed, static_cast<uint64_t>(i)};
  Rng r(seq);
  return Kinds()[i % Kinds().size()].make(t, r);
}

// ---- sending --------------------------------------------------------------

// A connection of its own: a local subchannel pool keeps channels to one
// address from sharing a TCP connection, so the threads really are
// separate peers.
std::shared_ptr<grpc::Channel> OwnChannel(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials(), args);
}

struct Peer {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Coordinator::Stub> stub;
  explicit Peer(int port)
      : channel(OwnChannel(port)), stub(v1::Coordinator::NewStub(channel)) {}
};

// One message of raw bytes on UploadDelta: what the generated stub does,
// with a ByteBuffer in place of a DeltaChunk so nothing is serialized.
grpc::Status SendRaw(grpc::Channel& ch, grpc::ClientContext* ctx,
                     const std::string& bytes) {
  const grpc::internal::RpcMethod method(
      "/shefl.v1.Coordinator/UploadDelta",
      grpc::internal::RpcMethod::CLIENT_STREAMING);
  grpc::ByteBuffer reply;
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> w(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
          &ch, method, ctx, &reply));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer msg(&slice, 1);
  w->Write(msg);
  w->WritesDone();
  return w->Finish();
}

grpc::Status Fire(Peer& peer, const Attack& a) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!a.raw.empty()) return SendRaw(*peer.channel, &ctx, a.raw);
  v1::UploadReply reply;
  auto w = peer.stub->UploadDelta(&ctx, &reply);
  // The server ends a refused stream early; later writes then fail.
  for (const auto& c : a.chunks)
    if (!w->Write(c)) break;
  w->WritesDone();
  return w->Finish();
}

void ParallelFor(std::vector<Peer>& peers, int n,
                 const std::function<void(Peer&, int)>& fn) {
  std::vector<std::thread> threads;
  for (size_t w = 0; w < peers.size(); ++w)
    threads.emplace_back([&, w] {
      for (int i = static_cast<int>(w); i < n;
           i += static_cast<int>(peers.size()))
        fn(peers[w], i);
    });
  for (auto& t : threads) t.join();
}

// ---- measuring ------------------------------------------------------------

// A line of /proc/self/status ("VmRSS", "VmHWM") in MiB; -1 if absent.
double StatusMiB(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0)
      return std::stod(line.substr(key.size() + 1)) / 1024.0;  // kB
  return -1;
}

// VmRSS once the allocator has handed back the free memory it holds, so
// that the figure is what is in use.
double LiveRssMiB() {
  malloc_trim(0);
  return StatusMiB("VmRSS");
}

// The largest VmRSS seen every 10 ms while it lives: the coordinator runs
// in this process, so this is its memory (and the test's, a constant).
class PeakRss {
 public:
  PeakRss()
      : thread_([this] {
          while (!stop_) {
            const double now = StatusMiB("VmRSS");
            if (now > peak_) peak_ = now;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }) {}
  double Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return std::max<double>(peak_, StatusMiB("VmRSS"));
  }
  ~PeakRss() { Stop(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<double> peak_{0};
  std::thread thread_;
};

// shefl_refusals_total{rpc="upload"} by reason, read from the registry the
// coordinator's /metrics serves.
std::map<std::string, double> UploadRefusals(CoordinatorState& s) {
  std::map<std::string, double> out;
  for (const auto& family : s.metrics.registry()->Collect()) {
    if (family.name != "shefl_refusals_total") continue;
    for (const auto& m : family.metric) {
      std::string rpc, reason;
      for (const auto& l : m.label) {
        if (l.name == "rpc") rpc = l.value;
        if (l.name == "reason") reason = l.value;
      }
      if (rpc == "upload") out[reason] += m.counter.value;
    }
  }
  return out;
}

// The feed books a task just after writing it, so the last task of a
// round may be booked after the test has read it: the ledger is still
// once every task of the round is booked.
bool TasksBooked(Harness& h, const std::vector<v1::Task>& tasks) {
  const auto books =
      h.coordinator->state().ledger.ByClient(tasks.front().round());
  for (const auto& t : tasks) {
    auto it = books.find(t.client_id());
    if (it == books.end() || it->second.control_down == 0) return false;
  }
  return true;
}

uint64_t BookedBytes(Harness& h) {
  const ByteCounts t = h.coordinator->state().ledger.Total();
  return t.payload_up + t.payload_down + t.control();
}

// ---- the campaign ---------------------------------------------------------

struct Tally {
  int sent = 0, refused = 0, right = 0;
  std::string reason;
  std::map<std::string, int> codes;  // what came back
  std::string wrong;                 // the first wrong answer
};

struct Campaign {
  std::vector<Tally> kinds;
  std::map<std::string, double> sent_by_reason;
  int sent = 0;
  // The same for the attacks the open round counts (Attack::in_round).
  std::map<std::string, double> round_by_reason;
  int round_sent = 0;
  double seconds = 0;
};

std::string CodeName(Code c) {
  switch (c) {
    case Code::OK:
      return "OK";
    case Code::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case Code::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case Code::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case Code::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case Code::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case Code::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    default:
      return "code " + std::to_string(static_cast<int>(c));
  }
}

void Record(Campaign& c, int i, const Attack& a, const grpc::Status& st) {
  Tally& t = c.kinds[i % Kinds().size()];
  ++t.sent;
  t.refused += !st.ok();
  ++t.codes[CodeName(st.error_code())];
  const bool right = st.error_code() == a.code &&
                     st.error_message().find(a.word) != std::string::npos;
  t.right += right;
  if (!right && t.wrong.empty())
    t.wrong = CodeName(st.error_code()) + " '" + st.error_message() +
              "', expected " + CodeName(a.code) + " with '" + a.word + "'";
  ++c.sent_by_reason[a.reason];
  ++c.sent;
  if (a.in_round) {
    ++c.round_by_reason[a.reason];
    ++c.round_sent;
  }
}

// Uploads [from, to) of the campaign, added to `c`.
void RunCampaign(const Target& t, std::vector<Peer>& peers, int from, int to,
                 Campaign& c) {
  c.kinds.resize(Kinds().size());
  std::mutex mu;
  const auto start = std::chrono::steady_clock::now();
  ParallelFor(peers, to - from, [&](Peer& peer, int j) {
    const int i = from + j;
    const Attack a = MakeAttack(t, i);
    const grpc::Status st = Fire(peer, a);
    std::lock_guard<std::mutex> lock(mu);
    Record(c, i, a, st);
    c.kinds[i % Kinds().size()].reason = a.reason;
  });
  c.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

void PrintTable(const Campaign& c,
                const std::map<std::string, double>& counted) {
  std::cout << "hostile-uploads: " << c.sent << " sent in " << std::fixed
            << std::setprecision(1) << c.seconds << " s\n"
            << std::left << std::setw(20) << "kind" << std::setw(15) << "reason"
            << std::right << std::setw(6) << "sent" << std::setw(8) << "refused"
            << std::setw(7) << "right"
            << "  code\n";
  for (size_t k = 0; k < c.kinds.size(); ++k) {
    const Tally& t = c.kinds[k];
    std::cout << std::left << std::setw(20) << Kinds()[k].name << std::setw(15)
              << (Kinds()[k].make == MaxFloat ? "(4 reasons)" : t.reason)
              << std::right << std::setw(6) << t.sent << std::setw(8)
              << t.refused << std::setw(7) << t.right << " ";
    for (const auto& [code, n] : t.codes) std::cout << " " << code << " x" << n;
    std::cout << "\n";
  }
  std::cout << std::left << std::setw(16) << "reason" << std::right
            << std::setw(8) << "sent" << std::setw(9) << "counted\n";
  for (const auto& [reason, n] : c.sent_by_reason)
    std::cout << std::left << std::setw(16) << reason << std::right
              << std::setw(8) << n << std::setw(8)
              << (counted.count(reason) ? counted.at(reason) : 0) << "\n";
}

void CheckCampaign(const Campaign& c,
                   const std::map<std::string, double>& counted) {
  CHECK(c.sent >= 10000);
  for (size_t k = 0; k < c.kinds.size(); ++k) {
    const Tally& t = c.kinds[k];
    INFO(Kinds()[k].name << ": first wrong answer: " << t.wrong);
    CHECK(t.sent == kPerKind);
    CHECK(t.refused == t.sent);
    CHECK(t.right == t.sent);
  }
  // The coordinator's own count, reason by reason, is what was sent.
  CHECK(counted == c.sent_by_reason);
}

// rounds.jsonl's line for the attacked round: the same counts by reason
// but for the streams that named no session of their caller's (those are
// on /metrics only), late ones apart, and only the round's own pairs
// accepted.
void CheckRoundLine(const nlohmann::json& line, const Campaign& c) {
  INFO(line.dump());
  std::map<std::string, double> refusals;
  for (const auto& [reason, n] : line["refusals"].items())
    refusals[reason] = n.get<double>();
  CHECK(refusals == c.round_by_reason);
  CHECK(c.round_sent < c.sent);
  const double late =
      c.round_by_reason.count("late") ? c.round_by_reason.at("late") : 0;
  CHECK(late > 0);
  CHECK(line["updates_late"].get<double>() == late);
  CHECK(line["updates_rejected"].get<double>() == c.round_sent - late);
  CHECK(line["updates_accepted"].get<int>() == kPairsPerRound);
}

std::map<std::string, double> Minus(std::map<std::string, double> a,
                                    const std::map<std::string, double>& b) {
  for (const auto& [k, v] : b) a[k] -= v;
  for (auto it = a.begin(); it != a.end();)
    it = it->second == 0 ? a.erase(it) : std::next(it);
  return a;
}

// ---- huge num_samples: not a refusal, and no weight -----------------------

struct ClaimRound {
  std::vector<std::vector<float>> before;  // by model
  std::vector<std::vector<SentUpdate>> sent;
};

// Every pair uploads 0.01 * (client + 1) on Delta's indices; the first
// client claims 2^64-1 samples in its headers, every other 1. The
// coordinator was told no shard sizes, so every p_i is 1.
ClaimRound UploadClaimingHugeNumSamples(Harness& h,
                                        const std::vector<v1::Task>& tasks) {
  ClaimRound c;
  const int64_t models = h.coordinator->state().config.model.num_models;
  for (int64_t m = 0; m < models; ++m) c.before.push_back(h.Weights(m));
  c.sent.resize(models);
  for (const auto& t : tasks)
    for (const auto& mt : t.models()) {
      SparseDelta d = Delta(h.dim(), mt.k());
      for (float& v : d.values) v = 0.01f * (t.client_id() + 1);
      const std::string blob = *EncodeSparseDelta(d, ValueType::kFp32);
      v1::UploadHeader hdr = HeaderFor(h.session, t, mt, blob.size());
      hdr.set_num_samples(&t == &tasks.front() ? UINT64_MAX : 1);
      const grpc::Status st = h.Upload(hdr, blob);
      INFO(st.error_message());
      REQUIRE(st.ok());
      c.sent[mt.model_id()].push_back({h.IsHpc(t.client_id()), d});
    }
  return c;
}

// After the round: each model is the equal-weight aggregate. Had the claim
// counted, the claimant's values would dominate its group's mean.
void CheckClaimIgnored(Harness& h, const ClaimRound& c) {
  // The round's line follows its evaluation, which runs beside the next
  // round: wait for it.
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(h.dir / "out/rounds.jsonl").size() >= 1; },
      60));
  REQUIRE(testing::ReadJsonl(h.dir / "out/rounds.jsonl").size() == 1u);
  for (size_t m = 0; m < c.before.size(); ++m) {
    INFO("model " << m);
    CHECK(CountMismatches(h.Weights(m),
                          WorkloadAware(c.before[m], c.sent[m])) == 0);
    CHECK(h.Weights(m) != c.before[m]);
  }
}

// ---- the attacked round -----------------------------------------------------

// `now`'s pairs, one of them (done) to be accepted before the campaign;
// `before`, the previous round's; and every hosted (client, model) that
// `now` did not assign.
Target MakeTarget(Harness& h, const std::vector<v1::Task>& now,
                  const std::vector<v1::Task>& before) {
  const CoordinatorState& s = h.coordinator->state();
  Target t;
  t.session = h.session;
  t.d = h.dim();
  t.round = now.front().round();
  t.num_models = s.config.model.num_models;
  t.num_clients = s.config.clients.num_clients;
  t.fresh = PairsOf(now);
  t.done = t.fresh.front();
  t.fresh.erase(t.fresh.begin());
  t.past = PairsOf(before);
  std::set<std::pair<int64_t, int64_t>> assigned;
  for (const PairRef& p : PairsOf(now)) assigned.insert({p.client, p.model});
  for (int64_t c = 0; c < t.num_clients; ++c)
    for (int64_t m = 0; m < t.num_models; ++m)
      if (!assigned.count({c, m}))
        t.unassigned.push_back({c, m, s.store->Version(m), t.done.k, t.round});
  return t;
}

void UploadZeroFor(Harness& h, const std::vector<v1::Task>& tasks,
                   const PairRef& p) {
  for (const auto& t : tasks)
    for (const auto& mt : t.models())
      if (t.client_id() == p.client &&
          static_cast<int64_t>(mt.model_id()) == p.model) {
        SparseDelta zero = Delta(h.dim(), mt.k());
        for (float& v : zero.values) v = 0;
        const std::string blob = *EncodeSparseDelta(zero, ValueType::kFp32);
        REQUIRE(h.Upload(HeaderFor(h.session, t, mt, blob.size()), blob).ok());
        return;
      }
  FAIL("pair not in the round");
}

// ---- good uploads -----------------------------------------------------------

// Every pair of `tasks` uploads a valid delta (1..k random entries, a
// random value type) from the peers at once. Returns what failed.
std::vector<std::string> GoodRound(Harness& h, std::vector<Peer>& peers,
                                   const std::vector<v1::Task>& tasks,
                                   uint64_t seed) {
  std::vector<std::pair<const v1::Task*, const v1::ModelTask*>> pairs;
  for (const auto& t : tasks)
    for (const auto& mt : t.models()) pairs.push_back({&t, &mt});
  const uint64_t d = h.dim();
  std::mutex mu;
  std::vector<std::string> failures;
  ParallelFor(peers, static_cast<int>(pairs.size()), [&](Peer& peer, int i) {
    std::seed_seq seq{seed, static_cast<uint64_t>(i)};
    Rng r(seq);
    const auto [t, mt] = pairs[i];
    const auto vt = static_cast<ValueType>(Uniform(r, 0, 2));
    const std::string s =
        *EncodeSparseDelta(RandomDelta(r, d, Uniform(r, 1, mt->k())), vt);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    v1::UploadReply reply;
    auto w = peer.stub->UploadDelta(&ctx, &reply);
    for (const auto& c :
         MakeUploadChunks(HeaderFor(h.session, *t, *mt, s.size()), s))
      w->Write(c);
    w->WritesDone();
    const grpc::Status st = w->Finish();
    if (st.ok() && reply.accepted()) return;
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(CodeName(st.error_code()) + " " + st.error_message());
  });
  return failures;
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

TEST_CASE("10000 hostile uploads are refused by reason and 1000 good ones pass",
          "[hostile]") {
  const auto start = std::chrono::steady_clock::now();
  // One malloc arena for the process: with glibc's default of one per
  // thread, freed buffers stay cached in whichever thread's arena served
  // them (tens of MiB here), and RSS would measure the scheduling rather
  // than what the coordinator keeps. Set before the coordinator's threads.
  REQUIRE(mallopt(M_ARENA_MAX, 1) == 1);
  Harness h(Config(), {"", 39});
  CoordinatorState& s = h.coordinator->state();
  REQUIRE(s.config.clients.num_clients == 40);
  REQUIRE(s.config.rounds == kRounds);
  std::vector<Peer> peers;
  for (int i = 0; i < kThreads; ++i)
    peers.emplace_back(h.coordinator->listening_port());

  // Round 1: the num_samples claim, accepted and without weight.
  const std::vector<v1::Task> round1 = h.NextTasks(kCohort);
  REQUIRE(PairsOf(round1).size() == size_t{kPairsPerRound});
  const ClaimRound claim = UploadClaimingHugeNumSamples(h, round1);
  const std::vector<v1::Task> round2 = h.NextTasks(kCohort);
  REQUIRE(PairsOf(round2).size() == size_t{kPairsPerRound});
  CheckClaimIgnored(h, claim);

  // Round 2: the campaign, against models, books and memory as they were.
  const Target t = MakeTarget(h, round2, round1);
  UploadZeroFor(h, round2, t.done);
  REQUIRE(testing::WaitUntil([&] { return TasksBooked(h, round2); }, 30));
  const std::vector<std::string> digests = s.store->Digests();
  const uint64_t booked = BookedBytes(h);
  const auto counted_before = UploadRefusals(s);
  // In two halves: memory may rise while streams are in flight (megabyte
  // chunks among them), but what stays must be small, and the second half
  // must not add to it, or something is kept per refusal.
  const int n = kPerKind * static_cast<int>(Kinds().size());
  Campaign c;
  const double rss_before = LiveRssMiB();
  PeakRss peak;
  RunCampaign(t, peers, 0, n / 2, c);
  const double rss_half = LiveRssMiB();
  RunCampaign(t, peers, n / 2, n, c);
  const double rss_peak = peak.Stop(), rss_after = LiveRssMiB();
  const auto counted = Minus(UploadRefusals(s), counted_before);
  PrintTable(c, counted);
  std::cout << "hostile-uploads: RSS before " << rss_before << " MiB, half-way "
            << rss_half << " MiB, after " << rss_after << " MiB, peak RSS "
            << rss_peak << " MiB (growth " << rss_peak - rss_before
            << " MiB)\n";
  CheckCampaign(c, counted);
  CHECK(s.store->Digests() == digests);
  CHECK(BookedBytes(h) == booked);
  CHECK(rss_peak - rss_before < kMaxPeakGrowthMiB);
  CHECK(rss_after - rss_before < kMaxGrowthMiB);
  CHECK(rss_after - rss_half < kMaxSecondHalfMiB);

  // Round 2 closes on zeros: the models come out as they went in.
  CHECK(h.UploadZeros(round2, {{t.done.client, t.done.model}}) ==
        kPairsPerRound - 1);
  std::vector<v1::Task> tasks = h.NextTasks(kCohort);
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(h.dir / "out/rounds.jsonl").size() >= 2; },
      60));
  std::vector<nlohmann::json> lines =
      testing::ReadJsonl(h.dir / "out/rounds.jsonl");
  REQUIRE(lines.size() == 2u);
  CheckRoundLine(lines[1], c);
  CHECK(s.store->Digests() == digests);

  // Rounds 3..: good uploads only, every one accepted.
  const auto good_start = std::chrono::steady_clock::now();
  size_t good = 0;
  std::vector<std::string> failures;
  for (int round = 3; round <= kRounds; ++round) {
    INFO("round " << round);
    REQUIRE(PairsOf(tasks).size() == size_t{kPairsPerRound});
    const auto f = GoodRound(h, peers, tasks, kSeed + round);
    good += kPairsPerRound - f.size();
    failures.insert(failures.end(), f.begin(), f.end());
    tasks = h.NextTasks(kCohort);
  }
  std::cout << "hostile-uploads: " << good << " good uploads accepted, "
            << failures.size() << " failed, in " << Since(good_start) << " s\n";
  CHECK(tasks.empty());  // the feed ended: no round after the last
  CHECK(good >= 1000);
  INFO("first failure: " << (failures.empty() ? "" : failures.front()));
  CHECK(failures.empty());

  // The run finished: its summary is written and every round has its line.
  CHECK(testing::WaitUntil(
      [&] { return std::ifstream(h.dir / "out/summary.json").good(); }, 60));
  lines = testing::ReadJsonl(h.dir / "out/rounds.jsonl");
  REQUIRE(lines.size() == size_t{kRounds});
  for (int r = 2; r < kRounds; ++r) {
    INFO(lines[r].dump());
    CHECK(lines[r]["updates_accepted"].get<int>() == kPairsPerRound);
    CHECK(lines[r]["updates_rejected"].get<int>() == 0);
  }
  std::cout << "hostile-uploads: whole test " << Since(start) << " s\n";
}

}  // namespace
}  // namespace shefl
