// The learning-rate schedule: the round's decayed lr (set by the
// coordinator in each task) and the local schedule within one training.
// Plain arithmetic, no LibTorch; pure functions, thread-safe.
#ifndef SHEFL_COMMON_FED_LR_SCHEDULE_H_
#define SHEFL_COMMON_FED_LR_SCHEDULE_H_

#include <cstdint>

#include "common/core/config.h"

namespace shefl {

// lr * lr_decay^floor(round / lr_decay_every); round counts from 0.
double RoundLearningRate(const TrainConfig& cfg, int64_t round);

// The lr of a local training's pass `pass` of `passes` (epochs), or of its
// step `pass` of `passes` when it trains by local_steps: round_lr under
// lr_schedule "constant"; round_lr * (1 + cos(pi * pass / passes)) / 2
// under "cosine" (CosineAnnealingLR with eta_min 0, stepped per epoch).
double LocalLearningRate(const TrainConfig& cfg, double round_lr, int64_t pass,
                         int64_t passes);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_LR_SCHEDULE_H_
