#include "cuda/step_graph_cuda.h"

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace shefl {

struct CudaStepGraph::Impl {
  c10::DeviceIndex index;
  c10::cuda::CUDAStream side;
  at::cuda::CUDAGraph graph;

  explicit Impl(c10::DeviceIndex i)
      : index(i), side(c10::cuda::getStreamFromPool(false, i)) {}

  // `fn` on the side stream, which waits for the current stream's work
  // before and makes the current stream wait for its own after.
  void OnSide(const std::function<void()>& fn) {
    c10::cuda::CUDAGuard device(index);
    c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(index);
    at::cuda::CUDAEvent before, after;
    before.record(current);
    before.block(side);
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      fn();
    }
    after.record(side);
    after.block(current);
  }
};

CudaStepGraph::CudaStepGraph(c10::Device device)
    : impl_(std::make_unique<Impl>(device.has_index()
                                       ? device.index()
                                       : c10::cuda::current_device())) {}

CudaStepGraph::~CudaStepGraph() = default;

void CudaStepGraph::Warmup(const std::function<void()>& step) {
  impl_->OnSide(step);
}

void CudaStepGraph::Capture(const std::function<void()>& step) {
  impl_->OnSide([&] {
    impl_->graph.capture_begin();
    try {
      step();
    } catch (...) {
      try {
        impl_->graph.capture_end();  // ends the stream's capture mode
      } catch (...) {
      }
      throw;
    }
    impl_->graph.capture_end();
  });
}

void CudaStepGraph::Replay() {
  c10::cuda::CUDAGuard device(impl_->index);
  impl_->graph.replay();
}

}  // namespace shefl
