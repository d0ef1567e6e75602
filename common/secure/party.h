// One party's side of a secure-aggregation session (one round, one
// model): a daemon, for the clients it hosts. It holds the secrets (two
// X25519 key pairs and the self-mask seed) and the shares other parties
// gave it, and guards them: it answers one unmasking request per session,
// never reveals both the seed share and the key share of one party, and
// answers nothing when fewer than t parties survive (docs/DESIGN.md,
// "Secure aggregation"). It refuses a roster whose t is not a majority of
// its n, masks only when t parties (itself included) shared with it, and
// its secrets wipe themselves when it goes (common/secure/secret.h).
// In a SecAgg+ session (the roster's degree k > 0) every "party" above
// means a neighbour in the session's graph (common/secure/neighbour_graph.h):
// boxes go to and come from the k neighbours only, masks pair with them
// only, t is a majority of the k + 1 holders (neighbours and itself), and
// the party answers only when t of those survive.
// Not thread-safe: one session, driven by one thread in stage order.
#ifndef SHEFL_COMMON_SECURE_PARTY_H_
#define SHEFL_COMMON_SECURE_PARTY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/masks.h"
#include "common/secure/messages.h"
#include "common/secure/neighbour_graph.h"
#include "common/secure/share_box.h"
#include "common/secure/x25519.h"

namespace shefl {

class SecureParty {
 public:
  // Fresh keys and seed for party `id` (from OpenSSL's private generator).
  static absl::StatusOr<std::unique_ptr<SecureParty>> Create(uint32_t id);
  ~SecureParty();
  SecureParty(const SecureParty&) = delete;
  SecureParty& operator=(const SecureParty&) = delete;

  // Stage 1: what the party advertises.
  KeyAdvert Advert() const;

  // Stage 2: checks the roster (it lists this party with its own keys,
  // ids ascending and distinct, the params' roster the same ids), derives
  // the session id, splits the seed and the masking key t of n, and seals
  // one box for every other party (every neighbour, in a graph).
  absl::StatusOr<std::vector<ShareBox>> ShareBoxes(const Roster& roster);

  // Stage 2, the other way: the boxes addressed to this party. Each must
  // open (else DataLoss: the coordinator or a peer tampered); their
  // senders are the peers whose pairwise masks this party adds.
  absl::Status TakeBoxes(absl::Span<const ShareBox> boxes);

  // Stage 3: y = q + masks, over the peers whose boxes arrived; refused
  // (FailedPrecondition) when fewer than t - 1 peers shared with this
  // party, since then no t survivors could ever unmask the sum.
  absl::StatusOr<MaskedInput> Mask(absl::Span<const uint32_t> q, double weight);

  // Stage 4: the shares the request asks for, after the checks above.
  // The same request again gets the same answer (a retried call); any
  // other request of the session is refused.
  absl::StatusOr<UnmaskReply> Unmask(const UnmaskRequest& request);

  // Zeros every secret the party holds now, as its destructor does: for
  // an owner that ends the session before it frees the party. Every stage
  // is refused after it (FailedPrecondition).
  void Wipe();

  // For tests only: every secret the party holds, concatenated (private
  // keys, seed, shares), and a probe the destructor calls, after its
  // wipe and before the memory goes, with SecretBytesForTest().
  std::vector<uint8_t> SecretBytesForTest() const;
  void SetDestroyProbeForTest(std::function<void(std::vector<uint8_t>)> probe) {
    destroy_probe_ = std::move(probe);
  }

  uint32_t id() const { return id_; }
  const SessionId& session_id() const { return sid_; }

 private:
  SecureParty() = default;
  absl::Status CheckRoster(const Roster& roster) const;
  absl::Status CheckRequest(const UnmaskRequest& request) const;
  // Whether this party and `peer` share and mask: neighbours in a graph,
  // every pair without one.
  bool Linked(uint32_t peer) const {
    return !graph_ || graph_->Adjacent(id_, peer);
  }
  // OK unless Wipe() ran; `what` names the refused stage.
  absl::Status NotWiped(const char* what) const;

  uint32_t id_ = 0;
  // The secrets are of types that wipe themselves (common/secure/secret.h;
  // ShamirShare does too).
  X25519KeyPair enc_;
  X25519KeyPair mask_;
  SelfSeed seed_;
  // Set by ShareBoxes.
  std::optional<Roster> roster_;
  SessionId sid_{};
  uint32_t t_ = 0;
  std::optional<NeighbourGraph> graph_;  // SecAgg+ sessions only
  PeerShares own_;  // this party's shares of its own secrets
  // Set by TakeBoxes: the shares each peer gave this party.
  std::map<uint32_t, PeerShares> from_peers_;
  bool masked_ = false;
  std::optional<UnmaskRequest> answered_;
  bool wiped_ = false;
  std::function<void(std::vector<uint8_t>)> destroy_probe_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_PARTY_H_
