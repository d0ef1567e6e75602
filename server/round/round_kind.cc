#include "server/round/round_kind.h"

#include "common/core/status_macros.h"
#include "common/fed/methods/registry.h"
#include "server/round/fens_round.h"
#include "server/round/iterative_round.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<RoundKind>> MakeRoundKind(
    const ExperimentConfig& config) {
  switch (TraitsOf(config.method).round_shape) {
    case RoundShape::kOneShot: {
      SHEFL_ASSIGN_OR_RETURN(auto kind, FensRound::Create(config));
      return std::unique_ptr<RoundKind>(std::move(kind));
    }
    case RoundShape::kIterative:
      break;
  }
  return std::unique_ptr<RoundKind>(new IterativeRound(config));
}

}  // namespace shefl
