// tensor/cuda_graph.h: work queued on a context's stream, captured once into
// a CUDA graph and launched again as one unit (optim/step_replay.h replays
// training steps with it).
//
// Note [Capturing a stream]: between cudaStreamBeginCapture and
// cudaStreamEndCapture nothing runs. Each kernel, copy, memset and library
// call queued on the stream becomes a node of a graph, with the arguments it
// had then: pointers, sizes, host scalars such as a learning rate. Launching
// the instantiated graph runs those nodes, in their order, for one host call
// instead of one per kernel. Whatever the host would decide differently later
// (a new learning rate, another shape) is not in the graph: the caller
// captures again. A call that needs the host to wait for the device (a copy
// to pageable host memory, cudaMalloc, cudaStreamSynchronize) cannot be
// captured: CUDA refuses it, the capture is abandoned, and capture() throws
// Error naming the call, with the stream usable again. The capture mode is
// cudaStreamCaptureModeThreadLocal: such calls are refused on the capturing
// thread only, so that loader threads may copy while the step is captured.
#pragma once

#include <functional>
#include <memory>

#include "tensor/context.h"
#include "tensor/cuda_entry.h"

namespace glassbox {

class CudaGraph {
 public:
  // Captures what `queue` launches on ctx's stream, runs none of it, and
  // instantiates the graph. Throws ConfigError for a CPU context; Error
  // ("while capturing a CUDA graph: ...") where a call cannot be captured or
  // `queue` throws: then the kind of error it threw, its message following
  // (rethrow_with_context, tensor/error.h).
  static CudaGraph capture(Context& ctx, const std::function<void()>& queue);

  // Runs the captured work, queued on ctx's stream; does not wait for it.
  void launch(Context& ctx) const;
  // The graph's nodes: kernels, copies, memsets.
  size_t nodes() const;

 private:
  explicit CudaGraph(std::shared_ptr<cuda_entry::CapturedGraph> graph) : graph_(std::move(graph)) {}
  std::shared_ptr<cuda_entry::CapturedGraph> graph_;
};

}  // namespace glassbox
