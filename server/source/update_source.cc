#include "server/source/update_source.h"

#include "common/core/log.h"
#include "common/net/run_label.h"
#include "server/source/plain_uploads.h"
#include "server/source/secure_sums.h"

namespace shefl {

std::unique_ptr<UpdateSource> MakeUpdateSource(CoordinatorState* state,
                                               const LostDaemons* lost,
                                               bool resumed) {
  const ExperimentConfig& cfg = state->config;
  if (cfg.aggregation.secure == "off")
    return std::make_unique<PlainUploads>(state, lost);
  if (resumed)
    LogLine("coordinator",
            "aggregation.secure: the support's accumulator is not in the "
            "checkpoint; it starts again from zero");
  return std::make_unique<SecureSums>(
      state, lost,
      std::make_unique<SecurePlanner>(cfg, state->store->dim(),
                                      RunIdOfFolder(cfg.out_dir)));
}

}  // namespace shefl
