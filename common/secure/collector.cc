#include "common/secure/collector.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/masks.h"
#include "common/secure/secagg_plus_params.h"
#include "common/secure/shamir.h"
#include "common/secure/x25519.h"

namespace shefl {
namespace {

template <typename Map>
std::vector<uint32_t> Keys(const Map& m) {
  std::vector<uint32_t> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace

SecureCollector::SecureCollector(CollectorSettings settings)
    : settings_(std::move(settings)) {}

absl::Status SecureCollector::InStage(Stage s, const char* what) const {
  if (abandoned_)
    return absl::FailedPreconditionError(
        absl::StrCat("secure aggregation: ", what, ": the session was abandoned"));
  if (stage_ != s)
    return absl::FailedPreconditionError(
        absl::StrCat("secure aggregation: ", what, " out of stage"));
  return absl::OkStatus();
}

absl::Status SecureCollector::Abandon(const char* stage, size_t left) {
  abandoned_ = true;
  return absl::FailedPreconditionError(absl::StrCat(
      "secure aggregation abandoned for round ", settings_.params.round, " model ",
      settings_.params.model, ": ", left, " parties left after ", stage,
      ", fewer than t = ", settings_.params.t, "; nothing is unmasked"));
}

absl::Status SecureCollector::ChooseShape(uint32_t n) {
  SessionParams& p = settings_.params;
  p.degree = 0;
  p.t = settings_.threshold > 0 ? settings_.threshold : 2 * n / 3 + 1;
  if (settings_.graph_above > 0 && n > settings_.graph_above) {
    if (settings_.graph_degree > 0) {
      if (settings_.graph_degree % 2 != 0)
        return absl::InvalidArgumentError(absl::StrCat(
            "secure.graph_degree = ", settings_.graph_degree, " is odd"));
      if (settings_.graph_degree + 1 < n) {
        p.degree = settings_.graph_degree;
        p.t = settings_.threshold > 0 ? settings_.threshold
                                      : 2 * (p.degree + 1) / 3 + 1;
      }
    } else {
      SHEFL_ASSIGN_OR_RETURN(
          GraphParams g,
          FindGraphParams(n, settings_.collude_fraction,
                          settings_.dropout_fraction, 40, 20,
                          /*majority=*/true));
      if (!g.complete()) {
        p.degree = static_cast<uint32_t>(g.degree);
        p.t = static_cast<uint32_t>(g.threshold);
      }
    }
  }
  // The parties refuse a t that is not a majority of each secret's
  // holders (common/secure/party.h); a dropped party's key has only its
  // neighbours' shares, so with a graph t is at most k.
  const uint32_t m = ShareHolders(p);
  const uint32_t most = p.degree > 0 ? p.degree : n;
  if (p.t > most)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure.threshold = ", p.t, " is above the ", most, " ",
        p.degree > 0 ? "neighbours of each party" : "parties of the session"));
  if (p.t < m / 2 + 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure.threshold = ", p.t, " is not a majority of the ", m,
        p.degree > 0 ? " holders of each secret" : " parties of the session",
        " (at least ", m / 2 + 1, ")"));
  return absl::OkStatus();
}

std::vector<uint32_t> SecureCollector::Holders(
    uint32_t party, const std::vector<uint32_t>& among) const {
  std::vector<uint32_t> out;
  for (uint32_t v : among)
    if (v == party || Linked(party, v)) out.push_back(v);
  return out;
}

absl::Status SecureCollector::CheckRebuildable() const {
  if (!graph_) return absl::OkStatus();
  const uint32_t t = settings_.params.t;
  const auto check = [&](uint32_t v, const char* what) -> absl::Status {
    const size_t have = Holders(v, request_.survivors).size();
    if (have >= t) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "secure aggregation abandoned for round ", settings_.params.round,
        " model ", settings_.params.model, ": party ", v, "'s ", what,
        " has ", have, " surviving holders, fewer than t = ", t,
        "; nothing is unmasked"));
  };
  for (uint32_t v : request_.survivors) SHEFL_RETURN_IF_ERROR(check(v, "seed"));
  for (uint32_t d : request_.dropped) SHEFL_RETURN_IF_ERROR(check(d, "key"));
  return absl::OkStatus();
}

absl::Status SecureCollector::AddAdvert(const KeyAdvert& advert) {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kAdverts, "keys"));
  if (!adverts_.emplace(advert.party, advert).second)
    return absl::AlreadyExistsError(
        absl::StrCat("secure aggregation: party ", advert.party, " advertised twice"));
  return absl::OkStatus();
}

absl::StatusOr<Roster> SecureCollector::CloseAdverts() {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kAdverts, "the roster"));
  const uint32_t n = static_cast<uint32_t>(adverts_.size());
  if (n < settings_.min_parties) {
    abandoned_ = true;
    return absl::FailedPreconditionError(absl::StrCat(
        "secure aggregation: ", n, " parties for round ", settings_.params.round,
        " model ", settings_.params.model, ", fewer than secure.min_parties = ",
        settings_.min_parties));
  }
  SessionParams& p = settings_.params;
  p.roster = Keys(adverts_);
  p.n = n;
  SHEFL_RETURN_IF_ERROR(ChooseShape(n));
  SHEFL_ASSIGN_OR_RETURN(sid_, MakeSessionId(p));
  if (p.degree > 0) {
    SHEFL_ASSIGN_OR_RETURN(auto graph, SessionGraph(p, sid_));
    graph_ = std::move(graph);
  }
  Roster roster{p, {}};
  for (const auto& [id, advert] : adverts_) roster.keys.push_back(advert);
  stage_ = Stage::kShares;
  return roster;
}

absl::Status SecureCollector::AddBoxes(uint32_t from, std::vector<ShareBox> boxes) {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kShares, "shares"));
  std::vector<uint32_t> to;
  for (const ShareBox& b : boxes) {
    if (b.from != from)
      return absl::PermissionDeniedError(absl::StrCat(
          "secure aggregation: party ", from, " sent a box as party ", b.from));
    to.push_back(b.to);
  }
  std::sort(to.begin(), to.end());
  std::vector<uint32_t> others;
  for (const auto& [id, advert] : adverts_)
    if (Linked(from, id)) others.push_back(id);
  if (!adverts_.count(from) || to != others)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: party ", from, "'s boxes are not one for each ",
        graph_ ? "neighbour" : "other party", " of the roster"));
  if (!sharers_.insert(from).second)
    return absl::AlreadyExistsError(
        absl::StrCat("secure aggregation: party ", from, " sent its boxes twice"));
  // Filed by recipient as they come, so handing a party its boxes is one
  // lookup, not a pass over all n^2.
  for (ShareBox& b : boxes) inbox_[b.to].push_back(std::move(b));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> SecureCollector::CloseShares() {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kShares, "closing the shares"));
  if (sharers_.size() < settings_.params.t) return Abandon("the shares", sharers_.size());
  stage_ = Stage::kInputs;
  return std::vector<uint32_t>(sharers_.begin(), sharers_.end());
}

std::vector<ShareBox> SecureCollector::BoxesFor(uint32_t party) const {
  const auto it = inbox_.find(party);
  return it == inbox_.end() ? std::vector<ShareBox>() : it->second;
}

absl::Status SecureCollector::AddInput(const MaskedInput& input) {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kInputs, "a masked input"));
  if (!sharers_.count(input.party))
    return absl::PermissionDeniedError(absl::StrCat(
        "secure aggregation: party ", input.party, " sent no shares, so no input"));
  if (input.y.size() != settings_.words)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: party ", input.party, "'s input has ", input.y.size(),
        " words, the session's support ", settings_.words));
  if (!(input.weight > 0) || !std::isfinite(input.weight))
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: party ", input.party, "'s weight is not positive"));
  if (weights_.count(input.party))
    return absl::AlreadyExistsError(
        absl::StrCat("secure aggregation: party ", input.party, " sent two inputs"));
  SHEFL_RETURN_IF_ERROR(AddMasked(&sum_, input.y));
  weights_.emplace(input.party, input.weight);
  return absl::OkStatus();
}

absl::StatusOr<UnmaskRequest> SecureCollector::CloseInputs() {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kInputs, "closing the inputs"));
  if (weights_.size() < settings_.params.t) return Abandon("the inputs", weights_.size());
  request_.survivors = Keys(weights_);
  for (uint32_t id : sharers_)
    if (!weights_.count(id)) request_.dropped.push_back(id);
  if (absl::Status st = CheckRebuildable(); !st.ok()) {
    abandoned_ = true;
    return st;
  }
  stage_ = Stage::kUnmask;
  return request_;
}

absl::Status SecureCollector::AddReply(const UnmaskReply& reply) {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kUnmask, "an unmasking reply"));
  if (!weights_.count(reply.party) || replies_.count(reply.party))
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: an unmasking reply from party ", reply.party,
        " that was not asked, or twice"));
  std::vector<uint32_t> dropped;
  for (uint32_t d : request_.dropped)
    if (Linked(reply.party, d)) dropped.push_back(d);
  if (Keys(reply.seed_shares) != Holders(reply.party, request_.survivors) ||
      Keys(reply.key_shares) != dropped)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure aggregation: party ", reply.party, "'s reply is not the shares asked for"));
  replies_.emplace(reply.party, reply);
  return absl::OkStatus();
}

absl::StatusOr<SecureSum> SecureCollector::Finish() const {
  SHEFL_RETURN_IF_ERROR(InStage(Stage::kUnmask, "the sum"));
  const uint32_t t = settings_.params.t;
  if (replies_.size() < t)
    return absl::FailedPreconditionError(absl::StrCat(
        "secure aggregation: ", replies_.size(), " unmasking replies, t = ", t, " needed"));
  // Each secret from the first t replies that hold a share of it: without
  // a graph every reply does, so one set of points fixes the Lagrange
  // weights once for every secret (at n = 1,000 that is what makes it
  // seconds); with one, the sets repeat little and each is cached.
  const auto& roster = settings_.params.roster;
  std::map<std::vector<uint32_t>, ShamirRebuilder> rebuilders;
  const auto rebuild = [&](uint32_t v, bool seed,
                           size_t bytes) -> absl::StatusOr<SecretBytes> {
    std::vector<uint32_t> xs;
    std::vector<ShamirShare> shares;
    for (const auto& [party, r] : replies_) {
      if (xs.size() == t) break;
      const auto& held = seed ? r.seed_shares : r.key_shares;
      const auto it = held.find(v);
      if (it == held.end()) continue;
      xs.push_back(static_cast<uint32_t>(
          std::lower_bound(roster.begin(), roster.end(), party) - roster.begin() + 1));
      shares.push_back(it->second);
    }
    if (xs.size() < t)
      return absl::FailedPreconditionError(absl::StrCat(
          "secure aggregation: ", xs.size(), " replies hold party ", v, "'s ",
          seed ? "seed" : "key", " shares, t = ", t, " needed"));
    auto cached = rebuilders.find(xs);
    if (cached == rebuilders.end()) {
      SHEFL_ASSIGN_OR_RETURN(auto r, ShamirRebuilder::ForPoints(xs));
      cached = rebuilders.emplace(xs, std::move(r)).first;
    }
    return cached->second.Reconstruct(shares, bytes);
  };
  // The rebuilt seeds and keys are secrets; their types wipe them when
  // Finish returns, whatever it returns.
  std::map<uint32_t, SelfSeed> seeds;
  std::map<uint32_t, Key32> survivor_public;
  for (uint32_t v : request_.survivors) {
    SHEFL_ASSIGN_OR_RETURN(
        auto b, rebuild(v, /*seed=*/true, kSelfSeedBytes));
    SHEFL_ASSIGN_OR_RETURN(auto seed, SelfSeed::CopyOf(b));
    seeds.emplace(v, std::move(seed));
    survivor_public[v] = adverts_.at(v).mask_public;
  }
  std::map<uint32_t, SecretKey32> dropped_private;
  for (uint32_t d : request_.dropped) {
    SHEFL_ASSIGN_OR_RETURN(auto s, rebuild(d, /*seed=*/false, 32));
    SHEFL_ASSIGN_OR_RETURN(auto pair, X25519KeyPairFromPrivate(s));
    // A share set that reconstructs a key other than the one advertised
    // would leave masks in the sum: refuse it rather than publish noise.
    if (pair.public_key != adverts_.at(d).mask_public)
      return absl::DataLossError(absl::StrCat(
          "secure aggregation: the shares of party ", d, "'s key do not give its key"));
    dropped_private.emplace(d, std::move(pair.private_key));
  }
  std::function<bool(uint32_t, uint32_t)> paired;
  if (graph_) paired = [this](uint32_t d, uint32_t u) { return Linked(d, u); };
  SHEFL_ASSIGN_OR_RETURN(auto sum, Unmask(sum_, seeds, dropped_private,
                                          survivor_public, sid_, paired));
  SecureSum out{std::move(sum), 0, request_.survivors, request_.dropped};
  for (const auto& [id, w] : weights_) out.weight += w;
  return out;
}

}  // namespace shefl
