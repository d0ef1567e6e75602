// One training step recorded once and replayed as a single launch: a CUDA
// graph where LibTorch has CUDA and the device is a GPU (cuda/
// step_graph_cuda.h). Elsewhere MakeStepGraph gives null and the caller
// steps eagerly. A replay runs the very kernels recorded, on the very
// tensors: the caller refreshes the step's inputs in place (static
// buffers) and must not replace any tensor the step reads or writes.
// Not thread-safe.
#ifndef SHEFL_COMMON_LEARN_STACKED_STEP_GRAPH_H_
#define SHEFL_COMMON_LEARN_STACKED_STEP_GRAPH_H_

#include <c10/core/Device.h>

#include <functional>
#include <memory>

#include "absl/status/status.h"

namespace shefl {

class StepGraph {
 public:
  virtual ~StepGraph() = default;
  // Runs `step` as the graph's capture will (a side stream): the calls
  // before a capture, so that libraries set themselves up outside it.
  virtual void Warmup(const std::function<void()>& step) = 0;
  // Records `step` without running it; Internal where CUDA refuses (then
  // nothing of `step` ran on the device and the graph is unusable).
  virtual absl::Status Capture(const std::function<void()>& step) = 0;
  // Runs the recorded step.
  virtual void Replay() = 0;
};

// Whether this build can record graphs (a CUDA LibTorch).
bool HasStepGraphs();
// A graph for `device`: null unless HasStepGraphs() and it is CUDA.
std::unique_ptr<StepGraph> MakeStepGraph(c10::Device device);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_STEP_GRAPH_H_
