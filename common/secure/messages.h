// The messages of one secure-aggregation session (one round, one model),
// as the party (common/secure/party.h) and the collector
// (common/secure/collector.h) exchange them; the wire carries them in
// proto/ form. Stages, in order (docs/DESIGN.md, "Secure aggregation"):
//   1. each party advertises two public keys (KeyAdvert);
//   2. the collector publishes the roster (Roster), and each party sends a
//      share box to every other party (ShareBoxes), which the collector
//      hands on (the boxes addressed to one party);
//   3. each party uploads its masked input (MaskedInput);
//   4. the collector names the survivors and the dropped (UnmaskRequest),
//      and each survivor answers with its shares (UnmaskReply).
#ifndef SHEFL_COMMON_SECURE_MESSAGES_H_
#define SHEFL_COMMON_SECURE_MESSAGES_H_

#include <cstdint>
#include <map>
#include <vector>

#include "common/secure/bytes.h"
#include "common/secure/session_id.h"
#include "common/secure/shamir_share.h"

namespace shefl {

struct KeyAdvert {
  uint32_t party = 0;
  Key32 enc_public{};   // c: keys the share boxes
  Key32 mask_public{};  // s: keys the pairwise masks
};

// The session's parameters (params.roster lists the parties) and every
// party's keys, in roster order (ascending ids): a party's Shamir point is
// its position + 1.
struct Roster {
  SessionParams params;
  std::vector<KeyAdvert> keys;
};

// A box from one party to another (common/secure/share_box.h).
struct ShareBox {
  uint32_t from = 0;
  uint32_t to = 0;
  Bytes box;
};

struct MaskedInput {
  uint32_t party = 0;
  double weight = 0;           // the public weight its input carries
  std::vector<uint32_t> y;     // K words
};

struct UnmaskRequest {
  std::vector<uint32_t> survivors;  // uploaded a masked input: seed shares
  std::vector<uint32_t> dropped;    // sent boxes, no input: key shares
};

struct UnmaskReply {
  uint32_t party = 0;
  std::map<uint32_t, ShamirShare> seed_shares;  // of b_v, v a survivor
  std::map<uint32_t, ShamirShare> key_shares;   // of s_d, d dropped
};

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_MESSAGES_H_
