#include "common/fed/lr_schedule.h"

#include <cmath>

namespace shefl {

double LocalLearningRate(const TrainConfig& cfg, double round_lr, int64_t pass,
                         int64_t passes) {
  if (cfg.lr_schedule != "cosine" || passes <= 0) return round_lr;
  const double t = static_cast<double>(pass) / static_cast<double>(passes);
  return round_lr * 0.5 * (1.0 + std::cos(M_PI * t));
}

double RoundLearningRate(const TrainConfig& cfg, int64_t round) {
  if (cfg.lr_decay_every <= 0 || round <= 0) return cfg.lr;
  const int64_t k = round / cfg.lr_decay_every;
  return cfg.lr * std::pow(cfg.lr_decay, static_cast<double>(k));
}

}  // namespace shefl
