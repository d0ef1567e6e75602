#include "server/state/secure_session.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/secure/honest_range.h"
#include "common/secure_wire/secure_wire.h"

namespace shefl {

double SecurePartyPlan::weight() const {
  double sum = 0;
  for (const auto& [client, w] : weights) sum += w;
  return sum;
}

SecureSession::SecureSession(SecureModelPlan plan,
                             std::chrono::milliseconds stage_timeout,
                             Clock::time_point input_deadline, Send send)
    : plan_(std::move(plan)),
      stage_timeout_(stage_timeout),
      input_deadline_(input_deadline),
      send_(std::move(send)),
      collector_(plan_.settings) {}

const SecurePartyPlan* SecureSession::Party(uint32_t id) const {
  for (const SecurePartyPlan& p : plan_.parties)
    if (p.id == id) return &p;
  return nullptr;
}

void SecureSession::Open(Stage s, std::vector<uint32_t> waiting,
                         Clock::time_point until) {
  stage_ = s;
  waiting_ = std::set<uint32_t>(waiting.begin(), waiting.end());
  until_ = until;
}

void SecureSession::Start() {
  MutexLock lock(mu_);
  std::vector<uint32_t> all;
  for (const SecurePartyPlan& p : plan_.parties) {
    v1::FeedMessage m;
    v1::SecureSetup* s = m.mutable_secure_setup();
    s->set_round(plan_.encoding.round);
    s->set_model_id(plan_.encoding.model);
    s->set_party(p.id);
    s->set_support(plan_.support_bytes);
    s->set_scale_bits(plan_.encoding.scale_bits);
    s->set_clip(plan_.encoding.clip);
    for (const auto& [client, w] : p.weights) {
      v1::SecureWeight* sw = s->add_weights();
      sw->set_client_id(static_cast<uint32_t>(client));
      sw->set_weight(w);
      if (auto k = p.own_k.find(client); k != p.own_k.end())
        sw->set_k(k->second);
      if (auto c = p.l2_clips.find(client); c != p.l2_clips.end())
        sw->set_l2_clip(c->second);
    }
    s->set_noise_mu(plan_.encoding.noise_mu);
    s->set_noise_seed(plan_.encoding.noise_seed);
    s->set_word_bits(static_cast<uint32_t>(plan_.encoding.word_bits));
    s->set_diagnose(plan_.encoding.diagnose);
    for (const TensorGrid& g : plan_.encoding.vote) {
      v1::SecureGrid* sg = s->add_vote();
      sg->set_offset(g.offset);
      sg->set_rows(g.rows);
      sg->set_cols(g.cols);
    }
    send_(p.id, m);
    all.push_back(p.id);
  }
  if (plan_.masked)
    Open(Stage::kKeys, std::move(all), Clock::now() + stage_timeout_);
  else
    Open(Stage::kInputs, std::move(all), input_deadline_);
}

absl::Status SecureSession::Take(const v1::SecureCall& call) {
  MutexLock lock(mu_);
  SHEFL_RETURN_IF_ERROR(TakeLocked(call));
  waiting_.erase(call.party());
  if (waiting_.empty()) CloseLocked();
  return absl::OkStatus();
}

absl::Status SecureSession::TakeLocked(const v1::SecureCall& call) {
  const uint32_t party = call.party();
  if (Party(party) == nullptr)
    return absl::PermissionDeniedError(absl::StrCat(
        "party ", party, " is not in the secure session of round ",
        plan_.encoding.round, " model ", plan_.encoding.model));
  if (!waiting_.count(party))
    return absl::FailedPreconditionError(absl::StrCat(
        "party ", party, ": no message of this kind is awaited from it now"));
  switch (call.stage_case()) {
    case v1::SecureCall::kKeys: {
      if (stage_ != Stage::kKeys) break;
      SHEFL_ASSIGN_OR_RETURN(auto advert, FromProto(call.keys()));
      if (advert.party != party)
        return absl::InvalidArgumentError("keys advertised for another party");
      return collector_.AddAdvert(advert);
    }
    case v1::SecureCall::kBoxes: {
      if (stage_ != Stage::kShares) break;
      SHEFL_ASSIGN_OR_RETURN(auto boxes, BoxesFromProto(call.boxes()));
      return collector_.AddBoxes(party, std::move(boxes));
    }
    case v1::SecureCall::kInput:
      if (stage_ != Stage::kInputs) break;
      return TakeInput(call);
    case v1::SecureCall::kShares: {
      if (stage_ != Stage::kUnmask) break;
      SHEFL_ASSIGN_OR_RETURN(auto reply, FromProto(call.shares(), party));
      return collector_.AddReply(reply);
    }
    default:
      return absl::InvalidArgumentError("secure call without a stage");
  }
  return absl::FailedPreconditionError(
      absl::StrCat("party ", party, ": a message of another stage"));
}

// A party declares the weight of the clients whose values its input
// holds (a client whose training failed adds none): at most the plan's.
absl::Status SecureSession::TakeInput(const v1::SecureCall& call) {
  const uint32_t party = call.party();
  SHEFL_ASSIGN_OR_RETURN(auto input,
                         FromProto(call.input(), party, plan_.settings.words,
                                   plan_.encoding.support.size(),
                                   plan_.encoding.word_bits));
  const double planned = Party(party)->weight();
  if (!(input.weight > 0 && input.weight <= planned * (1 + 1e-9)))
    return absl::InvalidArgumentError(absl::StrCat(
        "party ", party, " declares weight ", input.weight, "; its clients' "
        "public weights sum to ", planned));
  if (!plan_.masked) {
    if (plan_.encoding.diagnose)
      SHEFL_RETURN_IF_ERROR(AddPartyDiagnosis(call.input().dense(),
                                              call.input().own_union(),
                                              plan_.dim, &diagnosis_));
    clear_[party] = std::move(input.y);
  } else if (auto st = collector_.AddInput(input); !st.ok()) {
    return st;
  }
  declared_[party] = input.weight;
  return absl::OkStatus();
}

void SecureSession::Tick(Clock::time_point now,
                         const std::function<bool(uint32_t)>& gone) {
  MutexLock lock(mu_);
  if (stage_ == Stage::kDone) return;
  for (auto it = waiting_.begin(); it != waiting_.end();)
    it = gone(*it) ? waiting_.erase(it) : std::next(it);
  if (waiting_.empty() || now >= until_) CloseLocked();
}

void SecureSession::CloseLocked() {
  if (absl::Status st = CloseStage(); !st.ok()) {
    outcome_.why = std::string(st.message());
    stage_ = Stage::kDone;
    LogLine("coordinator", outcome_.why);
  }
}

absl::Status SecureSession::CloseStage() {
  const auto now = Clock::now();
  switch (stage_) {
    case Stage::kKeys: {
      SHEFL_ASSIGN_OR_RETURN(auto roster, collector_.CloseAdverts());
      outcome_.threshold = roster.params.t;
      outcome_.degree = roster.params.degree;
      v1::FeedMessage m;
      v1::SecureRoster* r = m.mutable_secure_roster();
      r->set_round(plan_.encoding.round);
      r->set_model_id(plan_.encoding.model);
      r->set_run_id(roster.params.run_id);
      r->set_threshold(roster.params.t);
      r->set_degree(roster.params.degree);
      r->set_support_hash(std::string(roster.params.support_hash.begin(),
                                      roster.params.support_hash.end()));
      r->set_model_hash(std::string(roster.params.model_hash.begin(),
                                    roster.params.model_hash.end()));
      for (const KeyAdvert& k : roster.keys) *r->add_keys() = ToProto(k);
      for (uint32_t p : roster.params.roster) send_(p, m);
      Open(Stage::kShares, roster.params.roster, now + stage_timeout_);
      return absl::OkStatus();
    }
    case Stage::kShares: {
      SHEFL_ASSIGN_OR_RETURN(auto sharers, collector_.CloseShares());
      for (uint32_t p : sharers) {
        v1::FeedMessage m;
        v1::SecureBoxes* b = m.mutable_secure_boxes();
        b->set_round(plan_.encoding.round);
        b->set_model_id(plan_.encoding.model);
        AddBoxes(collector_.BoxesFor(p), b);
        send_(p, m);
      }
      Open(Stage::kInputs, sharers, input_deadline_);
      return absl::OkStatus();
    }
    case Stage::kInputs: {
      if (!plan_.masked) return Finish();
      SHEFL_ASSIGN_OR_RETURN(auto request, collector_.CloseInputs());
      v1::FeedMessage m;
      v1::SecureUnmask* u = m.mutable_secure_unmask();
      u->set_round(plan_.encoding.round);
      u->set_model_id(plan_.encoding.model);
      ToProto(request, u);
      for (uint32_t p : request.survivors) send_(p, m);
      Open(Stage::kUnmask, request.survivors, now + stage_timeout_);
      return absl::OkStatus();
    }
    case Stage::kUnmask:
      return Finish();
    case Stage::kDone:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// The survivors' sum, back to floats on the support, times the rule's
// scale; the clients it holds.
absl::Status SecureSession::Finish() {
  SecureSum sum;
  if (plan_.masked) {
    SHEFL_ASSIGN_OR_RETURN(sum, collector_.Finish());
  } else {
    if (clear_.empty())
      return absl::FailedPreconditionError(absl::StrCat(
          "clear_support round ", plan_.encoding.round, " model ",
          plan_.encoding.model, ": no input arrived"));
    sum.sum.assign(plan_.settings.words, 0);
    for (const auto& [party, y] : clear_) {
      for (size_t i = 0; i < y.size(); ++i) sum.sum[i] += y[i];
      sum.survivors.push_back(party);
    }
    if (plan_.encoding.diagnose && !diagnosis_.dense.empty())
      outcome_.fit = FitOf(diagnosis_, plan_.encoding.support);
  }
  WidenValueWords(plan_.encoding, &sum.sum);
  outcome_.parties = sum.survivors;
  outcome_.survivors = static_cast<uint32_t>(sum.survivors.size());
  outcome_.dropped = static_cast<uint32_t>(sum.dropped.size());
  if (!Honest(sum)) {
    stage_ = Stage::kDone;
    return absl::OkStatus();
  }
  const double mass = Mass(sum.survivors);
  SHEFL_ASSIGN_OR_RETURN(auto values,
                         SecureUpdate(sum.sum, mass, plan_.encoding));
  outcome_.votes.assign(sum.sum.begin() + plan_.encoding.support.size(),
                        sum.sum.end());
  SparseDelta d{plan_.dim, plan_.encoding.support, std::move(values)};
  for (float& v : d.values) v = static_cast<float>(v * plan_.scale);
  outcome_.update = std::move(d);
  for (uint32_t p : sum.survivors)
    for (const auto& [client, w] : Party(p)->weights)
      outcome_.clients.push_back(client);
  stage_ = Stage::kDone;
  return absl::OkStatus();
}

// The bounds are the coordinator's own: the planned public weights and
// own k of every survivor's clients (a party declares at most those).
// With privacy.mode distributed, each client's words are also within its
// L2 clip (rounding adds under sqrt(K) to the norm), and the survivors'
// noise widens both bounds (common/secure/honest_range.h).
bool SecureSession::Honest(const SecureSum& sum) {
  const SecureEncoding& e = plan_.encoding;
  const size_t k = e.support.size();
  uint64_t bound = 0, counts = 0;
  double honest_l2 = 0;
  for (uint32_t p : sum.survivors) {
    const SecurePartyPlan* party = Party(p);
    for (const auto& [client, w] : party->weights) {
      uint64_t word = ClientWordBound(w, e.clip, e.scale_bits);
      if (auto c = party->l2_clips.find(client); c != party->l2_clips.end()) {
        const double l2 = std::ldexp(w * c->second, e.scale_bits) * (1 + 1e-9);
        word = std::min<uint64_t>(word, static_cast<uint64_t>(std::ceil(l2)) + 1);
        honest_l2 += l2 + std::sqrt(static_cast<double>(k));
      }
      bound += word;
    }
    for (const auto& [client, own] : party->own_k) counts += own;
  }
  const double noise = e.noise_mu * static_cast<double>(sum.survivors.size());
  bound = NoisyWordBound(bound, noise);
  const absl::Span<const uint32_t> all(sum.sum);
  if (const auto j = FirstDishonestWord(all.subspan(0, k), bound)) {
    Corrupt(sum, absl::StrCat("word ", *j, " (coordinate ",
                              e.support[*j], ") is ",
                              static_cast<int32_t>(sum.sum[*j]),
                              ", beyond the honest range +-", bound));
    return false;
  }
  if (e.noise_mu > 0)
    if (const auto norm = DishonestNorm(all.subspan(0, k), honest_l2, noise)) {
      Corrupt(sum, absl::StrCat("the sum's norm ", *norm,
                                " is beyond what its clients and the noise "
                                "can make, ", honest_l2, " + the noise's"));
      return false;
    }
  if (const auto j = FirstDishonestCount(all.subspan(k), counts)) {
    Corrupt(sum, absl::StrCat("vote word ", *j, " is ", sum.sum[k + *j],
                              ", beyond the clients' top-k total ", counts));
    return false;
  }
  return true;
}

void SecureSession::Corrupt(const SecureSum& sum, const std::string& why) {
  outcome_.corrupt = true;
  outcome_.why = absl::StrCat(why, " of ", sum.survivors.size(), " parties");
  LogLine("coordinator",
          absl::StrCat("round ", plan_.encoding.round, " model ",
                       plan_.encoding.model, ": secure sum corrupt: ",
                       outcome_.why));
}

// Where every survivor declared its whole planned weight, the mass is its
// clients' weights summed in client order: the same double whatever the
// packing of clients into daemons. Else the declared weights, in party
// order (still independent of the order of arrival).
double SecureSession::Mass(const std::vector<uint32_t>& survivors) const {
  std::map<int64_t, double> clients;
  double declared = 0;
  // Under distributed DP a party's declared weight would tell which of its
  // clients had no update (a function of their data): the planned mass.
  bool whole = true;
  for (uint32_t p : survivors) {
    const SecurePartyPlan* party = Party(p);
    declared += declared_.at(p);
    whole = whole && (plan_.encoding.noise_mu > 0 ||
                      declared_.at(p) == party->weight());
    clients.insert(party->weights.begin(), party->weights.end());
  }
  if (!whole) return declared;
  double mass = 0;
  for (const auto& [client, w] : clients) mass += w;
  return mass;
}

bool SecureSession::done() const {
  MutexLock lock(mu_);
  return stage_ == Stage::kDone;
}

SecureSession::Outcome SecureSession::outcome() const {
  MutexLock lock(mu_);
  return outcome_;
}

}  // namespace shefl
