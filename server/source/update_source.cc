#include "server/source/update_source.h"

#include "common/core/status_macros.h"
#include "common/net/run_label.h"
#include "server/source/central_privacy.h"
#include "server/source/distributed_privacy.h"
#include "server/source/plain_uploads.h"
#include "server/source/secure_sums.h"

namespace shefl {

namespace {

// The trainable tensors of the flat model, each as a grid of its first
// dimension x the rest (a vector: n x 1). The layout's entries tile the
// flat model in order.
std::vector<TensorGrid> TrainableGrids(const CoordinatorState& state) {
  std::vector<TensorGrid> out;
  uint64_t offset = 0;
  for (const v1::TensorLayout& t : state.model_layout) {
    uint64_t numel = 1;
    for (int64_t s : t.shape()) numel *= static_cast<uint64_t>(s);
    const uint64_t rows = t.shape_size() > 0 ? static_cast<uint64_t>(t.shape(0)) : 1;
    if (!t.buffer() && numel > 0) out.push_back({offset, rows, numel / rows});
    offset += numel;
  }
  return out;
}

// The layout support's W: the tensors of at most secure.whole_max entries.
std::vector<TensorSpan> SmallTensors(const CoordinatorState& state) {
  std::vector<TensorSpan> out;
  for (const TensorGrid& g : TrainableGrids(state))
    if (g.numel() <= static_cast<uint64_t>(state.config.secure.whole_max))
      out.push_back({g.offset, g.numel()});
  return out;
}

// The vote's grids: the larger ones.
std::vector<TensorGrid> VoteGrids(const CoordinatorState& state) {
  std::vector<TensorGrid> out;
  for (const TensorGrid& g : TrainableGrids(state))
    if (g.numel() > static_cast<uint64_t>(state.config.secure.whole_max))
      out.push_back(g);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UpdateSource>> MakeUpdateSource(
    CoordinatorState* state, const LostDaemons* lost) {
  const ExperimentConfig& cfg = state->config;
  if (cfg.aggregation.secure != "off") {
    auto sums = std::make_unique<SecureSums>(
        state, lost,
        std::make_unique<SecurePlanner>(cfg, state->store->dim(),
                                        RunIdOfFolder(cfg.out_dir),
                                        SmallTensors(*state), VoteGrids(*state)));
    if (cfg.privacy.mode != "distributed")
      return std::unique_ptr<UpdateSource>(std::move(sums));
    return std::unique_ptr<UpdateSource>(
        std::make_unique<DistributedPrivacy>(state, std::move(sums)));
  }
  auto plain = std::make_unique<PlainUploads>(state, lost);
  if (cfg.privacy.mode == "central") {
    SHEFL_ASSIGN_OR_RETURN(auto priv,
                           CentralPrivacy::Create(state, std::move(plain)));
    return std::unique_ptr<UpdateSource>(std::move(priv));
  }
  return std::unique_ptr<UpdateSource>(std::move(plain));
}

}  // namespace shefl
