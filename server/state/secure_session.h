// The coordinator's side of one secure-aggregation session (one round, one
// model) on the wire: the plan (parties, their clients' public weights,
// the support), the stage the session is in, whom it still waits for and
// until when, and the messages each stage's close sends down the parties'
// feeds. The cryptography is SecureCollector's (common/secure/collector.h).
//
// A stage closes when every party it waits for has answered or is gone, or
// at its deadline: stage_timeout_s after it opened for the keys, shares
// and unmasking, the round's deadline for the masked inputs. A party
// missing at a close is out from then on; fewer than t left abandons the
// session, and nothing is unmasked (docs/DESIGN.md, "Secure aggregation").
// Thread-safe: the round's gRPC handlers call Take, the round loop Tick;
// one mutex. `send` runs under it and must not call back.
#ifndef SHEFL_SERVER_STATE_SECURE_SESSION_H_
#define SHEFL_SERVER_STATE_SECURE_SESSION_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/core/mutex.h"
#include "common/secure/collector.h"
#include "common/secure/secure_input.h"
#include "common/secure/support_diagnosis.h"
#include "common/sparse/sparse_delta.h"
#include "shefl.pb.h"

namespace shefl {

// One daemon in a session: its id is the lowest client id it hosts there.
struct SecurePartyPlan {
  uint32_t id = 0;
  std::map<int64_t, double> weights;  // its clients, their public weights
  std::map<int64_t, uint64_t> own_k;  // each client's own top-k (the vote)
  // privacy.mode distributed: each client's L2 clip on C_t.
  std::map<int64_t, double> l2_clips;
  double weight() const;              // their sum, in client order
};

struct SecureModelPlan {
  uint64_t dim = 0;
  SecureEncoding encoding;    // support, clip, f, seed, round, model
  std::string support_bytes;  // the support in the index-set codec
  CollectorSettings settings;
  std::vector<SecurePartyPlan> parties;  // ascending id
  // The rule's step is scale x the weighted mean of the survivors' values
  // (scale = the sum of the planned coefficients; weights = coefficients
  // / their largest).
  double scale = 1;
  bool masked = true;  // false: clear_support, no keys or shares
  // secure.support: oracle: the support is every coordinate, and the
  // coordinator keeps the top select_k of the sum; 0 otherwise.
  uint64_t select_k = 0;
};

class SecureSession {
 public:
  using Clock = std::chrono::steady_clock;
  using Send = std::function<void(uint32_t party, const v1::FeedMessage&)>;

  SecureSession(SecureModelPlan plan, std::chrono::milliseconds stage_timeout,
                Clock::time_point input_deadline, Send send);

  // Sends every party its setup; the first stage opens.
  void Start();
  // A party's message for the stage now open. InvalidArgument or
  // FailedPrecondition (the reason) for a party not in the session, a
  // message of another stage, or one the collector refuses; nothing of it
  // is kept.
  absl::Status Take(const v1::SecureCall& call);
  // Closes the open stage at its deadline, or when everyone it waits for
  // has answered or is `gone`.
  void Tick(Clock::time_point now, const std::function<bool(uint32_t)>& gone);
  bool done() const;

  struct Outcome {
    std::optional<SparseDelta> update;  // on the support, scale included
    std::vector<int64_t> clients;       // whose values the update holds
    uint32_t survivors = 0, dropped = 0;
    // The roster's t and SecAgg+ degree (0: all pairs); 0 and 0 before it.
    uint32_t threshold = 0, degree = 0;
    // The unmasked sum left the honest range (common/secure/
    // honest_range.h): no update; `parties` sat in a corrupt session.
    bool corrupt = false;
    std::vector<uint32_t> parties;      // the survivors, ascending
    std::string why;                    // abandoned or corrupt: the reason
    // With a vote (encoding.vote): the sum's counts, V words; else empty.
    std::vector<uint32_t> votes;
    // With secure.diagnose, once summed: how the support fit the round.
    std::optional<SupportFit> fit;
  };
  // Once done.
  Outcome outcome() const;
  uint32_t model() const { return plan_.encoding.model; }
  uint64_t words() const { return plan_.settings.words; }
  uint64_t select_k() const { return plan_.select_k; }

 private:
  enum class Stage { kKeys, kShares, kInputs, kUnmask, kDone };
  absl::Status TakeLocked(const v1::SecureCall& call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TakeInput(const v1::SecureCall& call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CloseStage() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Finish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double Mass(const std::vector<uint32_t>& survivors) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `sum` could come from the survivors' encodings (the values
  // and the vote's counts); else marks the outcome corrupt, with the
  // first word beyond the range.
  bool Honest(const SecureSum& sum) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Corrupt(const SecureSum& sum, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Open(Stage s, std::vector<uint32_t> waiting, Clock::time_point until)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const SecurePartyPlan* Party(uint32_t id) const;

  const SecureModelPlan plan_;
  const std::chrono::milliseconds stage_timeout_;
  const Clock::time_point input_deadline_;
  const Send send_;
  mutable Mutex mu_;
  SecureCollector collector_ ABSL_GUARDED_BY(mu_);
  Stage stage_ ABSL_GUARDED_BY(mu_) = Stage::kKeys;
  std::set<uint32_t> waiting_ ABSL_GUARDED_BY(mu_);
  Clock::time_point until_ ABSL_GUARDED_BY(mu_);
  // clear_support: the inputs, summed as they come.
  std::map<uint32_t, std::vector<uint32_t>> clear_ ABSL_GUARDED_BY(mu_);
  // secure.diagnose: the parties' dense sums and own top-k union.
  SupportDiagnosis diagnosis_ ABSL_GUARDED_BY(mu_);
  // The weight each input declared: its clients' that sent values.
  std::map<uint32_t, double> declared_ ABSL_GUARDED_BY(mu_);
  Outcome outcome_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_SECURE_SESSION_H_
