#include "server/source/update_source.h"

#include "common/net/run_label.h"
#include "server/source/plain_uploads.h"
#include "server/source/secure_sums.h"

namespace shefl {

namespace {

// The layout support's W: trainable tensors of at most secure.whole_max
// entries. The layout's entries tile the flat model in order.
std::vector<TensorSpan> SmallTensors(const CoordinatorState& state) {
  std::vector<TensorSpan> out;
  uint64_t offset = 0;
  for (const v1::TensorLayout& t : state.model_layout) {
    uint64_t numel = 1;
    for (int64_t s : t.shape()) numel *= static_cast<uint64_t>(s);
    if (!t.buffer() &&
        numel <= static_cast<uint64_t>(state.config.secure.whole_max))
      out.push_back({offset, numel});
    offset += numel;
  }
  return out;
}

}  // namespace

std::unique_ptr<UpdateSource> MakeUpdateSource(CoordinatorState* state,
                                               const LostDaemons* lost) {
  const ExperimentConfig& cfg = state->config;
  if (cfg.aggregation.secure == "off")
    return std::make_unique<PlainUploads>(state, lost);
  return std::make_unique<SecureSums>(
      state, lost,
      std::make_unique<SecurePlanner>(cfg, state->store->dim(),
                                      RunIdOfFolder(cfg.out_dir),
                                      SmallTensors(*state)));
}

}  // namespace shefl
