// The coordinator's side of one secure-aggregation session (one round,
// one model): it gathers the parties' keys, publishes the roster, routes
// the share boxes it cannot read, sums the masked inputs, fixes the
// survivors, and removes the masks from any t answers. What it learns is
// the sum of the survivors' inputs, who survived, and who dropped
// (docs/DESIGN.md, "Secure aggregation").
//
// Above `graph_above` parties the session is SecAgg+ (Bell et al. 2020):
// the roster carries a degree k, every party masks with and shares to its k
// neighbours in the graph drawn from the session id
// (common/secure/neighbour_graph.h), and each secret is rebuilt from t
// shares of its own holders; which t replies those are differs by secret.
//
// Each stage closes when the caller says (at its deadline); a party
// missing then is out from that stage on. Fewer than t parties left at any
// close abandons the session: nothing is unmasked. The shares it is given
// and the seeds and keys it rebuilds wipe themselves when they go
// (common/secure/secret.h).
// Not thread-safe: the caller serialises the calls of one session.
#ifndef SHEFL_COMMON_SECURE_COLLECTOR_H_
#define SHEFL_COMMON_SECURE_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/secure/messages.h"
#include "common/secure/neighbour_graph.h"

namespace shefl {

// What the coordinator fixes before the keys arrive. The roster, n and t
// are filled in at CloseAdverts.
struct CollectorSettings {
  SessionParams params;      // run, round, model, scale, clip, hashes
  uint32_t threshold = 0;    // t; 0: floor(2n/3) + 1
  uint32_t min_parties = 5;  // fewer advertised keys: refused
  uint64_t words = 0;        // K, the size of every masked input
  // SecAgg+ above this many parties (0: never): the degree and t from
  // FindGraphParams(n, collude_fraction, dropout_fraction, majority), or
  // graph_degree when set (t then `threshold`, or floor(2(k + 1)/3) + 1).
  // A degree of n - 1 or more is all pairs, with the t above.
  uint32_t graph_above = 0;
  double collude_fraction = 1.0 / 3;
  double dropout_fraction = 1.0 / 3;
  uint32_t graph_degree = 0;
};

// The unmasked result: the sum of the survivors' encoded inputs, mod 2^32
// (common/secure/fixed_point.h decodes it), and the public weight mass.
struct SecureSum {
  std::vector<uint32_t> sum;
  double weight = 0;
  std::vector<uint32_t> survivors;
  std::vector<uint32_t> dropped;  // sent shares, no input
};

class SecureCollector {
 public:
  explicit SecureCollector(CollectorSettings settings);

  absl::Status AddAdvert(const KeyAdvert& advert);
  // Stage 1 closes: the roster of the parties that advertised.
  absl::StatusOr<Roster> CloseAdverts();

  // A party's boxes, one to every other party of the roster.
  absl::Status AddBoxes(uint32_t from, std::vector<ShareBox> boxes);
  // Stage 2 closes: the parties that sent boxes.
  absl::StatusOr<std::vector<uint32_t>> CloseShares();
  // The boxes addressed to `party` from the parties that sent theirs.
  std::vector<ShareBox> BoxesFor(uint32_t party) const;

  absl::Status AddInput(const MaskedInput& input);
  // Stage 3 closes: whom to ask, and for what.
  absl::StatusOr<UnmaskRequest> CloseInputs();

  absl::Status AddReply(const UnmaskReply& reply);
  // Stage 4: the sum, once t replies are in (FailedPrecondition before).
  absl::StatusOr<SecureSum> Finish() const;

  bool abandoned() const { return abandoned_; }
  const SessionId& session_id() const { return sid_; }
  uint32_t t() const { return settings_.params.t; }

 private:
  enum class Stage { kAdverts, kShares, kInputs, kUnmask, kDone };
  absl::Status InStage(Stage s, const char* what) const;
  absl::Status Abandon(const char* stage, size_t left);
  // Sets params.degree and params.t for n parties (degree 0: all pairs).
  absl::Status ChooseShape(uint32_t n);
  // Whether u and v mask with and share to each other.
  bool Linked(uint32_t u, uint32_t v) const {
    return u != v && (!graph_ || graph_->Adjacent(u, v));
  }
  // The parties of `among` that hold shares of `party`'s secrets, itself
  // included when it is among them.
  std::vector<uint32_t> Holders(uint32_t party,
                                const std::vector<uint32_t>& among) const;
  // With a graph, every survivor's seed and every dropped party's key
  // must have t surviving holders, or the sum can never be unmasked.
  absl::Status CheckRebuildable() const;

  CollectorSettings settings_;
  Stage stage_ = Stage::kAdverts;
  bool abandoned_ = false;
  SessionId sid_{};
  std::optional<NeighbourGraph> graph_;  // SecAgg+ sessions only
  std::map<uint32_t, KeyAdvert> adverts_;
  std::set<uint32_t> sharers_;                       // sent their boxes
  std::map<uint32_t, std::vector<ShareBox>> inbox_;  // by recipient
  std::map<uint32_t, double> weights_;                 // by input sender
  std::vector<uint32_t> sum_;
  UnmaskRequest request_;
  std::map<uint32_t, UnmaskReply> replies_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_COLLECTOR_H_
