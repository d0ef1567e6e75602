#include "common/secure/party.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/shamir.h"

namespace shefl {
namespace {

bool SortedDistinct(const std::vector<uint32_t>& ids) {
  return std::adjacent_find(ids.begin(), ids.end(), [](uint32_t a, uint32_t b) {
           return a >= b;
         }) == ids.end();
}

void WipeShares(PeerShares& s) {
  s.self_seed.Wipe();
  s.mask_private.Wipe();
}

void AppendShare(const ShamirShare& s, std::vector<uint8_t>* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.y.data());
  out->insert(out->end(), p, p + s.y.size() * sizeof(uint64_t));
}

}  // namespace

// The members would wipe themselves as they go; the wipe here comes first
// so that the probe sees what the freed memory will hold.
SecureParty::~SecureParty() {
  Wipe();
  if (destroy_probe_) destroy_probe_(SecretBytesForTest());
}

void SecureParty::Wipe() {
  enc_.private_key.Wipe();
  mask_.private_key.Wipe();
  seed_.Wipe();
  WipeShares(own_);
  for (auto& [peer, shares] : from_peers_) WipeShares(shares);
  wiped_ = true;
}

absl::Status SecureParty::NotWiped(const char* what) const {
  if (!wiped_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "secure aggregation: ", what, " refused: party ", id_,
      "'s secrets were wiped"));
}

std::vector<uint8_t> SecureParty::SecretBytesForTest() const {
  std::vector<uint8_t> out(enc_.private_key.begin(), enc_.private_key.end());
  out.insert(out.end(), mask_.private_key.begin(), mask_.private_key.end());
  out.insert(out.end(), seed_.begin(), seed_.end());
  AppendShare(own_.self_seed, &out);
  AppendShare(own_.mask_private, &out);
  for (const auto& [peer, shares] : from_peers_) {
    AppendShare(shares.self_seed, &out);
    AppendShare(shares.mask_private, &out);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<SecureParty>> SecureParty::Create(uint32_t id) {
  auto p = std::unique_ptr<SecureParty>(new SecureParty());
  p->id_ = id;
  SHEFL_ASSIGN_OR_RETURN(auto enc, GenerateX25519KeyPair());
  SHEFL_ASSIGN_OR_RETURN(auto mask, GenerateX25519KeyPair());
  SHEFL_ASSIGN_OR_RETURN(auto seed, GenerateSelfSeed());
  p->enc_ = std::move(enc);
  p->mask_ = std::move(mask);
  p->seed_ = std::move(seed);
  return p;
}

KeyAdvert SecureParty::Advert() const {
  return KeyAdvert{id_, enc_.public_key, mask_.public_key};
}

absl::Status SecureParty::CheckRoster(const Roster& roster) const {
  std::vector<uint32_t> ids;
  for (const KeyAdvert& k : roster.keys) ids.push_back(k.party);
  if (!SortedDistinct(ids) || ids != roster.params.roster)
    return absl::InvalidArgumentError(
        "secure aggregation: the roster's parties are not distinct and "
        "ascending, or differ from the session's");
  const auto me = std::find(ids.begin(), ids.end(), id_);
  if (me == ids.end())
    return absl::InvalidArgumentError(
        absl::StrCat("secure aggregation: party ", id_, " is not in the roster"));
  // A t of at most half the parties would let a coordinator that lies to
  // two halves of them collect a party's seed from one and its key from
  // the other: t must be a majority of n (Bonawitz et al. 2017).
  // With a graph the same holds of the k + 1 holders of each secret.
  const uint32_t n = roster.params.n, t = roster.params.t;
  const uint32_t m = ShareHolders(roster.params);
  if (n != ids.size() || m > n || t < m / 2 + 1 || t > m)
    return absl::PermissionDeniedError(absl::StrCat(
        "secure aggregation: refused: the roster's t = ", t, " of n = ", n,
        " (", ids.size(), " parties listed",
        roster.params.degree > 0
            ? absl::StrCat(", degree ", roster.params.degree, ": ", m,
                           " holders of each secret")
            : std::string(),
        ") is not a majority: t must be from ", m / 2 + 1, " to ", m));
  const KeyAdvert& mine = roster.keys[me - ids.begin()];
  if (mine.enc_public != enc_.public_key || mine.mask_public != mask_.public_key)
    return absl::PermissionDeniedError(absl::StrCat(
        "secure aggregation: the roster gives party ", id_, " other keys than its own"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ShareBox>> SecureParty::ShareBoxes(const Roster& roster) {
  SHEFL_RETURN_IF_ERROR(NotWiped("the roster"));
  if (roster_) return absl::FailedPreconditionError("secure aggregation: a second roster");
  SHEFL_RETURN_IF_ERROR(CheckRoster(roster));
  SHEFL_ASSIGN_OR_RETURN(auto sid, MakeSessionId(roster.params));
  if (roster.params.degree > 0) {
    SHEFL_ASSIGN_OR_RETURN(auto graph, SessionGraph(roster.params, sid));
    graph_ = std::move(graph);
  }
  const uint32_t n = roster.params.n, t = roster.params.t;
  SHEFL_ASSIGN_OR_RETURN(auto seed_shares, ShamirSplit(seed_, t, n));
  SHEFL_ASSIGN_OR_RETURN(auto key_shares, ShamirSplit(mask_.private_key, t, n));
  std::vector<ShareBox> boxes;
  for (uint32_t i = 0; i < n; ++i) {
    const KeyAdvert& peer = roster.keys[i];
    PeerShares shares{std::move(seed_shares[i]), std::move(key_shares[i])};
    if (peer.party == id_) {
      own_ = std::move(shares);
      continue;
    }
    // A non-neighbour's shares are never sent; they wipe themselves here.
    if (!Linked(peer.party)) continue;
    SHEFL_ASSIGN_OR_RETURN(
        auto box, SealShareBox(PackPeerShares(shares), sid, id_, peer.party,
                               enc_.private_key, peer.enc_public));
    boxes.push_back(ShareBox{id_, peer.party, std::move(box)});
  }
  roster_ = roster;
  sid_ = sid;
  t_ = t;
  return boxes;
}

absl::Status SecureParty::TakeBoxes(absl::Span<const ShareBox> boxes) {
  SHEFL_RETURN_IF_ERROR(NotWiped("boxes"));
  if (!roster_ || masked_)
    return absl::FailedPreconditionError("secure aggregation: boxes out of stage");
  const auto& ids = roster_->params.roster;
  const uint32_t my_x =
      static_cast<uint32_t>(std::find(ids.begin(), ids.end(), id_) - ids.begin()) + 1;
  std::map<uint32_t, PeerShares> got;
  for (const ShareBox& b : boxes) {
    // The roster is sorted by party (CheckRoster): a binary search.
    const auto it = std::lower_bound(
        roster_->keys.begin(), roster_->keys.end(), b.from,
        [](const KeyAdvert& k, uint32_t id) { return k.party < id; });
    if (b.to != id_ || b.from == id_ || it == roster_->keys.end() ||
        it->party != b.from || got.count(b.from) || !Linked(b.from))
      return absl::InvalidArgumentError(absl::StrCat(
          "secure aggregation: a box from ", b.from, " to ", b.to,
          " is not one party ", id_, " takes"));
    SHEFL_ASSIGN_OR_RETURN(
        auto plain, OpenShareBox(b.box, sid_, b.from, id_, enc_.private_key,
                                 it->enc_public));
    SHEFL_ASSIGN_OR_RETURN(auto shares, UnpackPeerShares(plain));
    if (shares.self_seed.x != my_x)
      return absl::DataLossError(absl::StrCat(
          "secure aggregation: party ", b.from, "'s shares are not at party ", id_, "'s point"));
    got.emplace(b.from, std::move(shares));
  }
  from_peers_ = std::move(got);
  return absl::OkStatus();
}

absl::StatusOr<MaskedInput> SecureParty::Mask(absl::Span<const uint32_t> q, double weight) {
  SHEFL_RETURN_IF_ERROR(NotWiped("input"));
  if (!roster_ || masked_)
    return absl::FailedPreconditionError("secure aggregation: input out of stage");
  // Fewer than t sharers (this party among them) can never unmask: the
  // session is lost, and an input masked with so few would add nothing.
  if (from_peers_.size() + 1 < t_)
    return absl::FailedPreconditionError(absl::StrCat(
        "secure aggregation: refused to mask: ", from_peers_.size() + 1,
        " parties shared with party ", id_, " (itself included), fewer than t = ", t_));
  std::map<uint32_t, Key32> peers;
  for (const KeyAdvert& k : roster_->keys)
    if (from_peers_.count(k.party)) peers.emplace(k.party, k.mask_public);
  SHEFL_ASSIGN_OR_RETURN(
      auto y, MaskInput(q, id_, seed_, mask_.private_key, peers, sid_));
  masked_ = true;
  return MaskedInput{id_, weight, std::move(y)};
}

absl::Status SecureParty::CheckRequest(const UnmaskRequest& r) const {
  if (!masked_)
    return absl::FailedPreconditionError(
        "secure aggregation: unmasking asked of a party that sent no input");
  std::vector<uint32_t> s = r.survivors, d = r.dropped;
  std::sort(s.begin(), s.end());
  std::sort(d.begin(), d.end());
  if (!SortedDistinct(s) || !SortedDistinct(d))
    return absl::InvalidArgumentError("secure aggregation: a party named twice");
  std::vector<uint32_t> both;
  std::set_intersection(s.begin(), s.end(), d.begin(), d.end(), std::back_inserter(both));
  if (!both.empty())
    return absl::PermissionDeniedError(absl::StrCat(
        "secure aggregation: refused: the request asks for both the seed and "
        "the key of party ", both.front()));
  // The survivors among the holders of this party's secrets (every party
  // without a graph): fewer than t, and nothing may be answered.
  size_t holders = 0;
  for (uint32_t v : s) holders += v == id_ || Linked(v);
  if (holders < t_)
    return absl::PermissionDeniedError(absl::StrCat(
        "secure aggregation: refused: ", holders,
        " survivors among the holders of party ", id_,
        "'s shares, fewer than t = ", t_));
  if (!std::binary_search(s.begin(), s.end(), id_))
    return absl::InvalidArgumentError("secure aggregation: asked, but not a survivor");
  for (uint32_t v : s)
    if (v != id_ && Linked(v) && !from_peers_.count(v))
      return absl::InvalidArgumentError(absl::StrCat(
          "secure aggregation: survivor ", v, " sent this party no shares"));
  for (uint32_t v : d)
    if (Linked(v) && !from_peers_.count(v))
      return absl::InvalidArgumentError(absl::StrCat(
          "secure aggregation: dropped party ", v, " sent this party no shares"));
  return absl::OkStatus();
}

absl::StatusOr<UnmaskReply> SecureParty::Unmask(const UnmaskRequest& asked) {
  SHEFL_RETURN_IF_ERROR(NotWiped("unmasking"));
  // The same request means the same sets, in whatever order.
  UnmaskRequest request = asked;
  std::sort(request.survivors.begin(), request.survivors.end());
  std::sort(request.dropped.begin(), request.dropped.end());
  if (answered_ && (answered_->survivors != request.survivors ||
                    answered_->dropped != request.dropped))
    return absl::PermissionDeniedError(
        "secure aggregation: refused: the session's unmasking was answered "
        "already, for other parties");
  SHEFL_RETURN_IF_ERROR(CheckRequest(request));
  UnmaskReply reply;
  reply.party = id_;
  for (uint32_t v : request.survivors) {
    if (v == id_)
      reply.seed_shares[v] = own_.self_seed;
    else if (Linked(v))
      reply.seed_shares[v] = from_peers_.at(v).self_seed;
  }
  for (uint32_t d : request.dropped)
    if (Linked(d)) reply.key_shares[d] = from_peers_.at(d).mask_private;
  answered_ = request;
  return reply;
}

}  // namespace shefl
