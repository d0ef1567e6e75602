#include "common/learn_stacked/stacked_eval.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/learn_stacked/stacked_members.h"

namespace shefl {

StackMembers StackedEval(StackedPath mode) {
  return [mode](const std::vector<std::shared_ptr<Net>>& models,
                c10::Device device) -> std::unique_ptr<MemberStack> {
    const bool want = mode == StackedPath::kOn ||
                      (mode == StackedPath::kAuto && device.is_cuda());
    if (!want || models.size() < 2 ||
        !StackedMembers::Supports(*models[0]).ok())
      return nullptr;
    absl::StatusOr<std::unique_ptr<StackedMembers>> s =
        StackedMembers::Create(models, device);
    if (!s.ok()) return nullptr;  // members that do not stack: the loop
    (*s)->train(false);           // running statistics, as eval mode
    return *std::move(s);
  };
}

}  // namespace shefl
