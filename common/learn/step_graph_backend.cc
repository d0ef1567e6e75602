#include <c10/util/Exception.h>

#include "absl/strings/str_cat.h"
#include "common/learn/step_graph.h"

#ifdef SHEFL_WITH_CUDA  // set on this file alone (common/learn/CMakeLists.txt)
#include "cuda/step_graph_cuda.h"
#endif

namespace shefl {

#ifdef SHEFL_WITH_CUDA
namespace {

class CudaGraph final : public StepGraph {
 public:
  explicit CudaGraph(c10::Device device) : graph_(device) {}
  void Warmup(const std::function<void()>& step) override {
    graph_.Warmup(step);
  }
  absl::Status Capture(const std::function<void()>& step) override {
    try {
      graph_.Capture(step);
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat("CUDA graph capture: ", e.what_without_backtrace()));
    }
    return absl::OkStatus();
  }
  void Replay() override { graph_.Replay(); }

 private:
  CudaStepGraph graph_;
};

}  // namespace
#endif

bool HasStepGraphs() {
#ifdef SHEFL_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<StepGraph> MakeStepGraph(c10::Device device) {
#ifdef SHEFL_WITH_CUDA
  if (device.is_cuda()) return std::make_unique<CudaGraph>(device);
#endif
  (void)device;
  return nullptr;
}

}  // namespace shefl
