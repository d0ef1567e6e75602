// One training step recorded as a CUDA graph and replayed as one launch,
// with a side stream of its own for the warm-up and the capture (CUDA
// refuses to capture on the default stream, and the first calls of cuBLAS
// and cuDNN must not be captured). Built only with a CUDA LibTorch;
// common/learn_stacked/step_graph_backend.cc adapts it to learn_stacked's
// StepGraph.
// Not thread-safe: one graph, one caller.
#ifndef SHEFL_CUDA_STEP_GRAPH_CUDA_H_
#define SHEFL_CUDA_STEP_GRAPH_CUDA_H_

#include <c10/core/Device.h>

#include <functional>
#include <memory>

namespace shefl {

class CudaStepGraph {
 public:
  // `device` is a CUDA device (its index, or the current device).
  explicit CudaStepGraph(c10::Device device);
  ~CudaStepGraph();
  CudaStepGraph(const CudaStepGraph&) = delete;
  CudaStepGraph& operator=(const CudaStepGraph&) = delete;

  // Runs `step` on the side stream, ordered after and before the current
  // stream's work.
  void Warmup(const std::function<void()>& step);
  // Records `step` into the graph without running it. Throws c10::Error
  // where the capture fails (an operation CUDA graphs cannot hold).
  void Capture(const std::function<void()>& step);
  // Runs the recorded step on the current stream.
  void Replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shefl

#endif  // SHEFL_CUDA_STEP_GRAPH_CUDA_H_
