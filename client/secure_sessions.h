// A daemon's side of secure aggregation (aggregation.secure;
// docs/DESIGN.md, "Secure aggregation"): one party per (round, model) for
// the clients it hosts that train the model. The coordinator's stages come
// on the feed (OnFeed); the daemon answers each with one Secure call: its
// keys on the setup, its share boxes on the roster, and, once it has the
// boxes addressed to it and every one of its clients in the session is
// trained (Contribute), its masked input: the sum of its clients' words
// on the support C_t (common/secure/secure_input.h), plus the masks. The
// unmasking request is answered by common/secure/party.h's rules.
//
// Each client's error-feedback residual keeps what it did not send (all
// of the update off C_t, the clipping and the rounding); it is staged when
// the input is built and settled by the coordinator's answer to it, as a
// plain upload's is (client/residual_book.h).
//
// A session's secrets (its party's keys, seed and shares, its input sum q
// before masking, and the deltas waiting for the setup) are wiped when it
// ends: at the end of its round, at a new registration, or with the
// sessions. What the trainer's tensors and the residual book hold is
// theirs.
// Thread-safe: one mutex for the sessions; calls go out without it.
#ifndef SHEFL_CLIENT_SECURE_SESSIONS_H_
#define SHEFL_CLIENT_SECURE_SESSIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/adversary.h"
#include "client/coordinator_link.h"
#include "client/residual_book.h"
#include "client/round_books.h"
#include "common/core/mutex.h"
#include "common/secure/party.h"
#include "common/secure/secret.h"
#include "common/secure/secure_input.h"
#include "common/secure/support_diagnosis.h"
#include "shefl.pb.h"

namespace shefl {

class SecureSessions {
 public:
  struct Parts {
    std::string name;                    // the daemon's, for log lines
    RoundBooks* books = nullptr;
    ResidualBook* residuals = nullptr;   // null: error feedback off
    uint64_t dim = 0;
    uint64_t seed = 0;                   // the run's: each client's rounding
    bool masked = true;                  // false: clear_support
    std::optional<Adversary> adversary;  // a lying daemon's (experiments)
    // --dp-min-multiplier: no masked input goes up from a session whose
    // noise is below this (common/secure/party_noise.h); 0: no check.
    double dp_min_multiplier = 0;
  };
  explicit SecureSessions(Parts parts) : p_(std::move(parts)) {}

  // The feed thread: a secure stage's message (setup, roster, boxes,
  // unmasking request); the answer goes up before it returns.
  void OnFeed(const CoordinatorLink& link, const v1::FeedMessage& m);
  // A worker: client `client`'s trained delta for (round, model) (d
  // floats), or nullopt when its training failed (it adds nothing).
  void Contribute(const CoordinatorLink& link, int64_t round, int64_t model,
                  int64_t client, std::optional<std::vector<float>> delta);
  // The round is over: its sessions are dropped.
  void RoundEnded(int64_t round);
  // A new registration: what the last connection left is gone, and a
  // coordinator resumed from a checkpoint may run an ended round again.
  void NewSession();

  // For tests only: the secret bytes of the session of (round, model)
  // (its party's, then q's, then the early deltas'; empty without one),
  // and a probe every ending session is handed to, after its wipe and
  // before it is freed, with the same bytes.
  std::vector<uint8_t> SecretBytesForTest(int64_t round, int64_t model);
  void SetEndProbeForTest(std::function<void(std::vector<uint8_t>)> probe);

 private:
  using Key = std::pair<int64_t, int64_t>;  // (round, model)
  struct Session {
    Session() = default;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    ~Session() { Wipe(); }
    // Zeros the session's secrets (listed above) in place.
    void Wipe();
    std::vector<uint8_t> SecretBytesForTest() const;

    bool setup = false;
    SecureEncoding encoding;
    uint32_t party = 0;
    uint32_t threshold = 0;  // t, from the roster
    std::map<int64_t, double> weights;  // its clients in the session
    std::map<int64_t, uint64_t> own_k;  // their own top-k, for the vote
    // privacy.mode distributed: their L2 clips on C_t (0: none).
    std::map<int64_t, double> l2_clips;
    std::unique_ptr<SecureParty> secure;
    bool boxes = false;       // took the boxes addressed to it
    bool input_sent = false;
    SecretWords q;  // the sum of its clients' words, before masking
    std::set<int64_t> added;  // clients whose words are in q
    std::set<int64_t> done;   // clients whose part is in (or failed)
    // secure.diagnose (clear_support): the dense sum and own top-k union.
    SupportDiagnosis diagnosis;
    // Deltas that came before the setup.
    std::map<int64_t, std::optional<std::vector<float>>> early;
  };
  absl::Status OnSetup(const CoordinatorLink& link, const v1::SecureSetup& s);
  absl::Status OnRoster(const CoordinatorLink& link, const v1::SecureRoster& r);
  absl::Status OnBoxes(const CoordinatorLink& link, const v1::SecureBoxes& b);
  absl::Status OnUnmask(const CoordinatorLink& link,
                        const v1::SecureUnmask& u);
  // The session of `key` with its party made (masked, after the setup);
  // FailedPrecondition naming `what` arrived without one.
  absl::StatusOr<Session*> Masked(const Key& key, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds one client's words (under mu_), then wipes the delta.
  void AddLocked(const Key& key, Session& s, int64_t client,
                 std::optional<std::vector<float>> delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddDeltaLocked(const Key& key, Session& s, int64_t client,
                      const std::vector<float>& delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wipes the session, shows it to the probe, and drops it.
  std::map<Key, Session>::iterator EndLocked(std::map<Key, Session>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The masked input when everything for it is in; sent without mu_.
  void MaybeSendInput(const CoordinatorLink& link, const Key& key);
  // One Secure call, booked at both ends' sizes.
  absl::Status Call(const CoordinatorLink& link, v1::SecureCall call);
  void Log(const Key& key, const std::string& what) const;

  const Parts p_;
  Mutex mu_;
  std::map<Key, Session> sessions_ ABSL_GUARDED_BY(mu_);
  int64_t ended_ ABSL_GUARDED_BY(mu_) = 0;  // the last round that ended
  std::function<void(std::vector<uint8_t>)> end_probe_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_SECURE_SESSIONS_H_
