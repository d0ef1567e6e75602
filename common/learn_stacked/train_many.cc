// LocalTrainMany (stacked_train.h): an HPC's members on the stacked path
// where it applies, else one LocalTrain after another.
#include "absl/strings/str_cat.h"
#include "common/learn/train.h"
#include "common/learn_stacked/stacked_members.h"
#include "common/learn_stacked/stacked_train.h"

namespace shefl {

absl::StatusOr<std::vector<TrainStats>> LocalTrainMany(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p, StackedPath stacked,
    const std::vector<at::Tensor>& prox_references) {
  if (!prox_references.empty() && prox_references.size() != models.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LocalTrainMany: ", prox_references.size(),
                     " prox references for ", models.size(), " models"));
  }
  const bool stack =
      stacked == StackedPath::kOn ||
      (stacked == StackedPath::kAuto && p.device.is_cuda() &&
       models.size() > 1 && StackedMembers::Supports(*models[0]).ok());
  if (stack) {
    return LocalTrainStacked(models, data, indices, cfg, p, prox_references);
  }
  std::vector<TrainStats> out;
  for (size_t k = 0; k < models.size(); ++k) {
    LocalTrainParams pk = p;
    if (!prox_references.empty()) pk.prox_reference = prox_references[k];
    absl::StatusOr<TrainStats> s =
        LocalTrain(*models[k], data, indices, cfg, pk);
    if (!s.ok()) {
      return absl::Status(
          s.status().code(),
          absl::StrCat("member ", k, ": ", s.status().message()));
    }
    out.push_back(*s);
  }
  return out;
}

}  // namespace shefl
