// SecureSessions' masked input (client/secure_sessions.h): once every
// client of a session is in, the party's sum gets its distributed-DP noise
// (common/secure/party_noise.h) and its masks, goes up in one Secure
// call, and the answer settles its clients' error-feedback residuals.
#include "absl/strings/str_cat.h"
#include "client/secure_sessions.h"
#include "client/task_uploader.h"
#include "common/secure/party_noise.h"
#include "common/secure_wire/secure_wire.h"

namespace shefl {

void SecureSessions::MaybeSendInput(const CoordinatorLink& link,
                                    const Key& key) {
  v1::SecureCall call;
  std::set<int64_t> clients;
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) return;
    Session& s = it->second;
    if (!s.setup || s.input_sent || s.done.size() < s.weights.size() ||
        (p_.masked && !s.boxes))
      return;
    s.input_sent = true;
    if (s.added.empty()) return Log(key, "no client's update to send");
    double weight = 0;  // summed in client order, as the coordinator does
    for (int64_t c : s.added) weight += s.weights.at(c);
    // privacy.mode distributed: the noise goes in before the masks, so
    // nothing unmasked is ever without it; none too small goes up at all.
    std::vector<ClientClip> clips;
    for (int64_t c : s.added) clips.push_back({s.weights.at(c), s.l2_clips[c]});
    if (auto st = CheckNoiseFloor(s.encoding, s.threshold, clips,
                                  p_.dp_min_multiplier);
        !st.ok())
      return Log(key, std::string(st.message()));
    if (auto st = AddPartyNoise(s.encoding, s.party, &s.q); !st.ok())
      return Log(key, std::string(st.message()));
    // Masked, q itself is never copied out; clear (clear_support), it is
    // sent as it is.
    MaskedInput input{s.party, weight, {}};
    if (p_.masked) {
      auto masked = s.secure->Mask(s.q, weight);
      if (!masked.ok()) return Log(key, std::string(masked.status().message()));
      input = *std::move(masked);
    } else {
      input.y.assign(s.q.begin(), s.q.end());
    }
    if (p_.adversary) p_.adversary->TamperWords(&input.y);
    *call.mutable_input() =
        ToProto(input, s.encoding.support.size(), s.encoding.word_bits);
    if (s.encoding.diagnose) {
      call.mutable_input()->set_dense(DenseBytes(s.diagnosis));
      call.mutable_input()->set_own_union(UnionBytes(s.diagnosis));
    }
    call.set_party(s.party);
    clients = s.added;
  }
  call.set_round(key.first);
  call.set_model_id(key.second);
  const absl::Status sent = Call(link, call);
  if (!sent.ok()) Log(key, absl::StrCat("masked input: ", sent.message()));
  if (!p_.residuals || !TaskUploader::Settles(sent)) return;
  for (int64_t c : clients) {
    if (sent.ok()) {
      p_.residuals->Commit(c, key.second, key.first).IgnoreError();
    } else {
      p_.residuals->Discard(c, key.second, key.first);
    }
  }
}

}  // namespace shefl
