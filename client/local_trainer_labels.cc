// LocalTrainer::LabelCounts: a client's label histogram, the only thing of
// its data a HASA run sends (the HASA paper: counts, never samples).
#include "client/local_trainer.h"
#include "common/data/data.h"
#include "common/net/label_counts.h"

namespace shefl {

std::vector<uint64_t> LocalTrainer::LabelCounts(int64_t client) const {
  auto shard = shards_.find(client);
  auto labels = LabelVector(train_);
  if (shard == shards_.end() || !labels.ok()) return {};
  return LabelHistogram(*labels, shard->second, train_.num_classes);
}

}  // namespace shefl
