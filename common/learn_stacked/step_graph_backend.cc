#include "common/learn/torch_call.h"
#include "common/learn_stacked/step_graph.h"

// SHEFL_WITH_CUDA: set on this file alone
// (common/learn_stacked/CMakeLists.txt).
#ifdef SHEFL_WITH_CUDA
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
    return TorchCall("CUDA graph capture", [&] { graph_.Capture(step); });
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
