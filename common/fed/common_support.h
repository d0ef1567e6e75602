// The common support of secure aggregation: the K coordinates every party
// of a (round, model) uploads, chosen from public data only, so that the
// positions of an upload say nothing about its client's data.
//
//   C_t = the top (K - E) coordinates of |A| (A, the public accumulator of
//         past published global updates; only its non-zero entries
//         count), and E = round(explore_fraction * K) more, with whatever
//         the top part lacked (before the first round A is all zeros),
//         drawn uniformly from the rest by a generator seeded by
//         (run seed, round, model).
//
// The layout support (secure.support: layout) knows the model's tensors:
//
//   C_t = W u V_t u R_t. W: every trainable tensor of at most
//         secure.whole_max entries (biases, a last layer, a first
//         convolution), smallest first, whole, while they fit in K/2; the
//         first that does not fit gets the rest of K/2 as a window that
//         moves on each round, so it is covered in turns.
//         R_t: a share max(secure.layout_explore, 1/t) of the rest drawn
//         from the round seed (all of it in round 1, half in round 2, ...,
//         the floor from then on). V_t: the rest, the top of |A| outside W;
//         with a vote (secure.vote; common/fed/vote_support.h), the
//         voted coordinates first, then |A| for what the vote leaves.
//
// Both parts are public: the coordinator computes C_t and sends it (index
// codec) to the parties; an auditor with the published updates can
// recompute it.
#ifndef SHEFL_COMMON_FED_COMMON_SUPPORT_H_
#define SHEFL_COMMON_FED_COMMON_SUPPORT_H_

#include <cstdint>
#include <vector>

namespace shefl {

struct SupportChoice {
  uint64_t k = 0;                  // K, the support's size (at most d)
  double explore_fraction = 0.25;  // the part drawn at random
  uint64_t seed = 0;               // the run's seed
  int64_t round = 0;
  uint32_t model = 0;
};

// C_t for an accumulator of d entries: min(K, d) distinct coordinates in
// ascending order. Ties in |A| go to the lower coordinate, so the choice
// is a function of its inputs alone.
std::vector<uint32_t> CommonSupport(const std::vector<float>& accumulator,
                                    const SupportChoice& choice);

// One tensor of the flat model: [offset, offset + numel).
struct TensorSpan {
  uint64_t offset = 0, numel = 0;
};

struct SupportVote;  // common/fed/vote_support.h

// The layout support: `small` the trainable tensors of at most
// secure.whole_max entries; `explore_floor` the least share of the rest
// drawn at random; `vote` the last round's vote, or null. min(K, d)
// distinct coordinates, ascending.
std::vector<uint32_t> LayoutSupport(const std::vector<float>& accumulator,
                                    std::vector<TensorSpan> small,
                                    double explore_floor,
                                    const SupportChoice& choice,
                                    const SupportVote* vote = nullptr);

// The public accumulator after a published global update u of a model:
// A <- decay * A + u, entry by entry. Signed, so a coordinate that moves
// back and forth loses its place to one that keeps moving.
void AccumulateUpdate(const std::vector<float>& update, float decay,
                      std::vector<float>* accumulator);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_COMMON_SUPPORT_H_
