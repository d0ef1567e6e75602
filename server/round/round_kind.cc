#include "server/round/round_kind.h"

#include "common/fed/methods/registry.h"
#include "server/round/fens_round.h"
#include "server/round/iterative_round.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<RoundKind>> MakeRoundKind(
    const ExperimentConfig& config) {
  switch (TraitsOf(config.method).round_shape) {
    case RoundShape::kOneShot: {
      auto kind = FensRound::Create(config);
      if (!kind.ok()) return kind.status();
      return std::unique_ptr<RoundKind>(std::move(*kind));
    }
    case RoundShape::kIterative:
      break;
  }
  return std::unique_ptr<RoundKind>(new IterativeRound(config));
}

}  // namespace shefl
