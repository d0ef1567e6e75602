#include "common/secure/neighbour_graph.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/aes_ctr.h"
#include "common/secure/hkdf.h"
#include "common/secure/secret.h"

namespace shefl {

namespace {

constexpr char kGraphInfo[] = "shefl neighbour graph v1";
constexpr size_t kSeedBytes = 32;

// The AES-CTR word stream under one key, read in order. When the words
// drawn so far run out, the stream is drawn again twice as long: it starts
// from the same counter, so the words already read come back the same.
class WordStream {
 public:
  explicit WordStream(SecretKey32 key) : key_(std::move(key)) {}

  absl::StatusOr<uint32_t> Next() {
    if (used_ == words_.size()) {
      SHEFL_ASSIGN_OR_RETURN(
          words_, AesCtrWords(key_, std::max<size_t>(64, 2 * words_.size())));
    }
    return words_[used_++];
  }

  // Uniform on 0..m - 1 (1 <= m <= 2^32): a word is kept only below the
  // largest multiple of m under 2^32, so every residue is equally likely.
  absl::StatusOr<uint32_t> Below(uint64_t m) {
    const uint64_t limit = (uint64_t{1} << 32) - (uint64_t{1} << 32) % m;
    while (true) {
      SHEFL_ASSIGN_OR_RETURN(uint32_t w, Next());
      if (w < limit) return static_cast<uint32_t>(w % m);
    }
  }

 private:
  SecretKey32 key_;
  SecretWords words_;
  size_t used_ = 0;
};

absl::Status CheckParties(absl::Span<const uint32_t> sorted) {
  if (sorted.size() < 2)
    return absl::InvalidArgumentError(absl::StrCat(
        "neighbour graph: parties must hold at least 2, got ", sorted.size()));
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      return absl::InvalidArgumentError(
          absl::StrCat("neighbour graph: parties holds ", sorted[i], " twice"));
  return absl::OkStatus();
}

absl::Status CheckDegree(int64_t degree, int64_t n) {
  if (degree >= n - 1) return absl::OkStatus();
  if (degree >= 2 && degree % 2 == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "neighbour graph: degree must be even and 2..", n - 2, ", or at least ",
      n - 1, " (complete) for ", n, " parties, got ", degree));
}

// Fisher-Yates over `ring` with indices from the graph key of `seed`.
absl::Status Shuffle(ByteView seed, std::vector<uint32_t>* ring) {
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 key,
                         HkdfSha256Key(seed, ByteView(), AsBytes(kGraphInfo)));
  WordStream stream(std::move(key));
  for (size_t i = ring->size() - 1; i > 0; --i) {
    SHEFL_ASSIGN_OR_RETURN(uint32_t j, stream.Below(i + 1));
    std::swap((*ring)[i], (*ring)[j]);
  }
  return absl::OkStatus();
}

}  // namespace

int64_t NeighbourGraph::degree() const {
  return complete_ ? static_cast<int64_t>(ring_.size()) - 1 : 2 * half_;
}

int64_t NeighbourGraph::Position(uint32_t party) const {
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), party);
  if (it == sorted_.end() || *it != party) return -1;
  return position_[it - sorted_.begin()];
}

bool NeighbourGraph::Contains(uint32_t party) const {
  return Position(party) >= 0;
}

absl::StatusOr<std::vector<uint32_t>> NeighbourGraph::Neighbours(
    uint32_t party) const {
  const int64_t p = Position(party);
  if (p < 0)
    return absl::NotFoundError(
        absl::StrCat("neighbour graph: party ", party, " is not in it"));
  std::vector<uint32_t> out;
  if (complete_) {
    out.reserve(sorted_.size() - 1);
    for (uint32_t v : sorted_)
      if (v != party) out.push_back(v);
    return out;
  }
  // 2 * half_ <= n - 2, so the 2 * half_ positions around p are distinct.
  const int64_t n = static_cast<int64_t>(ring_.size());
  for (int64_t step = 1; step <= half_; ++step) {
    out.push_back(ring_[(p + step) % n]);
    out.push_back(ring_[(p - step + n) % n]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool NeighbourGraph::Adjacent(uint32_t u, uint32_t v) const {
  const int64_t pu = Position(u), pv = Position(v);
  if (u == v || pu < 0 || pv < 0) return false;
  if (complete_) return true;
  const int64_t n = static_cast<int64_t>(ring_.size());
  const int64_t gap = pu > pv ? pu - pv : pv - pu;
  return std::min(gap, n - gap) <= half_;
}

absl::StatusOr<NeighbourGraph> MakeNeighbourGraph(
    ByteView seed, absl::Span<const uint32_t> parties, int64_t degree) {
  if (seed.size() != kSeedBytes)
    return absl::InvalidArgumentError(absl::StrCat(
        "neighbour graph: seed must be 32 bytes, got ", seed.size()));
  NeighbourGraph g;
  g.sorted_.assign(parties.begin(), parties.end());
  std::sort(g.sorted_.begin(), g.sorted_.end());
  SHEFL_RETURN_IF_ERROR(CheckParties(g.sorted_));
  const int64_t n = static_cast<int64_t>(g.sorted_.size());
  SHEFL_RETURN_IF_ERROR(CheckDegree(degree, n));
  g.ring_ = g.sorted_;
  g.complete_ = degree >= n - 1;
  if (!g.complete_) {
    g.half_ = degree / 2;
    SHEFL_RETURN_IF_ERROR(Shuffle(seed, &g.ring_));
  }
  g.position_.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto it =
        std::lower_bound(g.sorted_.begin(), g.sorted_.end(), g.ring_[i]);
    g.position_[it - g.sorted_.begin()] = static_cast<uint32_t>(i);
  }
  return g;
}

absl::StatusOr<NeighbourGraph> SessionGraph(const SessionParams& params,
                                            const SessionId& sid) {
  const int64_t n = static_cast<int64_t>(params.roster.size());
  return MakeNeighbourGraph(sid, params.roster,
                            params.degree > 0 ? params.degree : n - 1);
}

}  // namespace shefl
