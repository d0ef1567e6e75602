#include "client/secure_sessions.h"

#include <ATen/ATen.h>
#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/net/accounting.h"
#include "common/net/grpc_status.h"
#include "common/secure/public_hashes.h"
#include "common/secure/secret.h"
#include "common/secure_wire/secure_wire.h"
#include "common/sparse/index_set_codec.h"

namespace shefl {
namespace {

// A stage's call waits at most this long for the coordinator's answer.
constexpr std::chrono::seconds kCallDeadline{60};

std::vector<float> ToVector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU).to(at::kFloat).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

void WipeFloats(std::vector<float>& v) {
  WipeBytes(v.data(), v.capacity() * sizeof(float));
}

void AppendBytesOf(const void* p, size_t n, std::vector<uint8_t>* out) {
  const auto* b = static_cast<const uint8_t*>(p);
  out->insert(out->end(), b, b + n);
}

}  // namespace

void SecureSessions::Session::Wipe() {
  if (secure) secure->Wipe();
  q.Wipe();
  for (auto& [client, delta] : early)
    if (delta) WipeFloats(*delta);
}

std::vector<uint8_t> SecureSessions::Session::SecretBytesForTest() const {
  std::vector<uint8_t> out;
  if (secure) out = secure->SecretBytesForTest();
  AppendBytesOf(q.data(), q.size() * sizeof(uint32_t), &out);
  for (const auto& [client, delta] : early)
    if (delta) AppendBytesOf(delta->data(), delta->size() * sizeof(float), &out);
  return out;
}

std::vector<uint8_t> SecureSessions::SecretBytesForTest(int64_t round,
                                                        int64_t model) {
  MutexLock lock(mu_);
  const auto it = sessions_.find({round, model});
  return it == sessions_.end() ? std::vector<uint8_t>()
                               : it->second.SecretBytesForTest();
}

void SecureSessions::SetEndProbeForTest(
    std::function<void(std::vector<uint8_t>)> probe) {
  MutexLock lock(mu_);
  end_probe_ = std::move(probe);
}

std::map<SecureSessions::Key, SecureSessions::Session>::iterator
SecureSessions::EndLocked(std::map<Key, Session>::iterator it) {
  it->second.Wipe();
  if (end_probe_) end_probe_(it->second.SecretBytesForTest());
  return sessions_.erase(it);
}

void SecureSessions::Log(const Key& key, const std::string& what) const {
  LogLine(p_.name, absl::StrCat("secure round ", key.first, " model ",
                                key.second, ": ", what));
}

void SecureSessions::OnFeed(const CoordinatorLink& link,
                            const v1::FeedMessage& m) {
  absl::Status st;
  switch (m.kind_case()) {
    case v1::FeedMessage::kSecureSetup:
      st = OnSetup(link, m.secure_setup());
      break;
    case v1::FeedMessage::kSecureRoster:
      st = OnRoster(link, m.secure_roster());
      break;
    case v1::FeedMessage::kSecureBoxes:
      st = OnBoxes(link, m.secure_boxes());
      break;
    case v1::FeedMessage::kSecureUnmask:
      st = OnUnmask(link, m.secure_unmask());
      break;
    default:
      return;
  }
  if (!st.ok())
    LogLine(p_.name, absl::StrCat("secure aggregation: ", st.message()));
}

absl::Status SecureSessions::OnSetup(const CoordinatorLink& link,
                                     const v1::SecureSetup& s) {
  const Key key{static_cast<int64_t>(s.round()), s.model_id()};
  SHEFL_ASSIGN_OR_RETURN(auto support,
                         DecodeIndexSet(s.support(), p_.dim, p_.dim));
  v1::SecureCall call;
  {
    MutexLock lock(mu_);
    if (key.first <= ended_) return absl::OkStatus();  // a stale setup
    Session& session = sessions_[key];
    if (session.setup) return absl::AlreadyExistsError("a second setup");
    session.setup = true;
    session.party = s.party();
    SecureEncoding& e = session.encoding;
    e.support = std::move(support);
    e.clip = s.clip();
    e.scale_bits = static_cast<int>(s.scale_bits());
    e.word_bits = s.word_bits() == 16 ? 16 : 32;
    // Never in a masked session: the dense sums would give away what the
    // masks hide, whoever asks.
    e.diagnose = s.diagnose() && !p_.masked;
    e.seed = p_.seed;
    e.round = key.first;
    e.model = s.model_id();
    e.noise_mu = s.noise_mu();
    e.noise_seed = s.noise_seed();
    for (const v1::SecureWeight& w : s.weights()) {
      session.weights[w.client_id()] = w.weight();
      session.own_k[w.client_id()] = w.k();
      session.l2_clips[w.client_id()] = w.l2_clip();
    }
    for (const v1::SecureGrid& g : s.vote())
      e.vote.push_back({g.offset(), g.rows(), g.cols()});
    auto early = std::move(session.early);
    for (auto& [client, delta] : early)
      AddLocked(key, session, client, std::move(delta));
    if (p_.masked) {
      SHEFL_ASSIGN_OR_RETURN(session.secure,
                             SecureParty::Create(session.party));
      *call.mutable_keys() = ToProto(session.secure->Advert());
    }
  }
  if (!p_.masked) {
    MaybeSendInput(link, key);
    return absl::OkStatus();
  }
  call.set_round(key.first);
  call.set_model_id(s.model_id());
  call.set_party(s.party());
  return Call(link, call);
}

absl::StatusOr<SecureSessions::Session*> SecureSessions::Masked(
    const Key& key, const char* what) {
  auto it = sessions_.find(key);
  if (it == sessions_.end() || !it->second.secure)
    return absl::FailedPreconditionError(absl::StrCat(
        what, " for round ", key.first, " model ", key.second,
        " without a setup"));
  return &it->second;
}

absl::Status SecureSessions::OnRoster(const CoordinatorLink& link,
                                      const v1::SecureRoster& r) {
  const Key key{static_cast<int64_t>(r.round()), r.model_id()};
  v1::SecureCall call;
  {
    MutexLock lock(mu_);
    SHEFL_ASSIGN_OR_RETURN(auto found, Masked(key, "a roster"));
    Session& s = *found;
    Roster roster;
    SessionParams& p = roster.params;
    p.run_id = r.run_id();
    p.round = r.round();
    p.model = r.model_id();
    p.n = static_cast<uint32_t>(r.keys_size());
    p.t = r.threshold();
    s.threshold = p.t;
    p.degree = r.degree();
    p.scale_bits = static_cast<uint32_t>(s.encoding.scale_bits);
    p.clip = s.encoding.clip;
    SHEFL_ASSIGN_OR_RETURN(const Key32 support_hash,
                           ToKey32(AsBytes(r.support_hash()), "support_hash"));
    SHEFL_ASSIGN_OR_RETURN(p.model_hash,
                           ToKey32(AsBytes(r.model_hash()), "model_hash"));
    // The support the roster's session id binds must be the one we have.
    SHEFL_ASSIGN_OR_RETURN(auto own, SupportHash(s.encoding.support));
    if (own != support_hash)
      return absl::DataLossError("the roster's support is not the setup's");
    p.support_hash = support_hash;
    for (const v1::SecureKeys& k : r.keys()) {
      SHEFL_ASSIGN_OR_RETURN(auto advert, FromProto(k));
      p.roster.push_back(advert.party);
      roster.keys.push_back(advert);
    }
    SHEFL_ASSIGN_OR_RETURN(auto boxes, s.secure->ShareBoxes(roster));
    v1::SecureBoxes* b = call.mutable_boxes();
    b->set_round(r.round());
    b->set_model_id(r.model_id());
    AddBoxes(boxes, b);
    call.set_party(s.party);
  }
  call.set_round(key.first);
  call.set_model_id(r.model_id());
  return Call(link, call);
}

absl::Status SecureSessions::OnBoxes(const CoordinatorLink& link,
                                     const v1::SecureBoxes& b) {
  const Key key{static_cast<int64_t>(b.round()), b.model_id()};
  {
    MutexLock lock(mu_);
    SHEFL_ASSIGN_OR_RETURN(auto found, Masked(key, "share boxes"));
    SHEFL_ASSIGN_OR_RETURN(auto boxes, BoxesFromProto(b));
    SHEFL_RETURN_IF_ERROR(found->secure->TakeBoxes(boxes));
    found->boxes = true;
  }
  MaybeSendInput(link, key);
  return absl::OkStatus();
}

absl::Status SecureSessions::OnUnmask(const CoordinatorLink& link,
                                      const v1::SecureUnmask& u) {
  const Key key{static_cast<int64_t>(u.round()), u.model_id()};
  v1::SecureCall call;
  {
    MutexLock lock(mu_);
    SHEFL_ASSIGN_OR_RETURN(auto found, Masked(key, "an unmasking request"));
    SHEFL_ASSIGN_OR_RETURN(auto reply, found->secure->Unmask(FromProto(u)));
    *call.mutable_shares() = ToProto(reply);
    call.set_party(found->party);
  }
  call.set_round(key.first);
  call.set_model_id(u.model_id());
  return Call(link, call);
}

void SecureSessions::Contribute(const CoordinatorLink& link, int64_t round,
                                int64_t model, int64_t client,
                                std::optional<std::vector<float>> delta) {
  const Key key{round, model};
  {
    MutexLock lock(mu_);
    if (round <= ended_) return;  // its session is gone with its round
    Session& s = sessions_[key];
    if (!s.setup) {
      auto& waiting = s.early[client];
      if (waiting) WipeFloats(*waiting);  // a repeat replaces it
      waiting = std::move(delta);
      return;
    }
    AddLocked(key, s, client, std::move(delta));
  }
  MaybeSendInput(link, key);
}

void SecureSessions::AddLocked(const Key& key, Session& s, int64_t client,
                               std::optional<std::vector<float>> delta) {
  if (!s.weights.count(client) || !s.done.insert(client).second || !delta) {
    if (delta) WipeFloats(*delta);
    return;
  }
  AddDeltaLocked(key, s, client, *delta);
  WipeFloats(*delta);
}

// The client's words, with the residual in force; what it did not send
// is staged as its next residual.
void SecureSessions::AddDeltaLocked(const Key& key, Session& s, int64_t client,
                                    const std::vector<float>& delta) {
  const double weight = s.weights.at(client);
  std::vector<float> residual;
  if (p_.residuals) {
    const at::Tensor r = p_.residuals->InForce(client, key.second, key.first);
    if (r.defined() && static_cast<size_t>(r.numel()) == delta.size())
      residual = ToVector(r);
  }
  // The diagnosis reads the residual in force, which the input replaces.
  const std::vector<float> in_force =
      s.encoding.diagnose ? residual : std::vector<float>();
  if (auto st = AddClientInput(delta, weight, static_cast<uint32_t>(client),
                               s.encoding, &residual, &s.q, s.own_k[client],
                               s.l2_clips[client]);
      !st.ok()) {
    Log(key, absl::StrCat("client ", client, ": ", st.message()));
    return;
  }
  s.added.insert(client);
  if (s.encoding.diagnose)
    AddClientDiagnosis(delta, in_force, weight, s.encoding.clip,
                       s.own_k[client], &s.diagnosis);
  if (!p_.residuals) return;
  if (residual.empty()) residual = delta;  // the support was empty
  at::Tensor t = at::from_blob(residual.data(),
                               {static_cast<int64_t>(residual.size())},
                               at::kFloat)
                     .clone();
  if (auto st = p_.residuals->Stage(client, key.second, key.first, t); !st.ok())
    Log(key, absl::StrCat("client ", client, ": residual not kept: ",
                          st.message()));
}

absl::Status SecureSessions::Call(const CoordinatorLink& link,
                                  v1::SecureCall call) {
  call.set_session_id(link.session_id);
  grpc::ClientContext ctx;
  link.AddCallMetadata(&ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  v1::SecureReply reply;
  SHEFL_RETURN_IF_ERROR(FromGrpc(link.stub->Secure(&ctx, call, &reply)));
  const int64_t round = static_cast<int64_t>(call.round());
  p_.books->Book(round, call.party(), call.model_id(), Direction::kUp,
                 call.has_input() ? Traffic::kPayload : Traffic::kControl,
                 WireSize(call));
  p_.books->Book(round, call.party(), call.model_id(), Direction::kDown,
                 Traffic::kControl, WireSize(reply));
  return absl::OkStatus();
}

void SecureSessions::NewSession() {
  MutexLock lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) it = EndLocked(it);
  ended_ = 0;
}

void SecureSessions::RoundEnded(int64_t round) {
  MutexLock lock(mu_);
  ended_ = std::max(ended_, round);
  for (auto it = sessions_.begin(); it != sessions_.end();)
    it = it->first.first <= round ? EndLocked(it) : std::next(it);
}

}  // namespace shefl
