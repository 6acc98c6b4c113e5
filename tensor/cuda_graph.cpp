// tensor/cuda_graph.cpp: see tensor/cuda_graph.h; the CUDA half is
// tensor/cuda_graph_cuda.cpp.
#include "tensor/cuda_graph.h"

#include "tensor/error.h"

namespace glassbox {

CudaGraph CudaGraph::capture(Context& ctx, const std::function<void()>& queue) {
  if (ctx.cuda_state() == nullptr) {
    throw ConfigError(cat("CUDA graphs need a CUDA device; this context is ", ctx.device().str()));
  }
  return CudaGraph(cuda_entry::capture_graph(*ctx.cuda_state(), queue));
}

void CudaGraph::launch(Context& ctx) const {
  if (ctx.cuda_state() == nullptr) throw Error(cat("CudaGraph::launch on a ", ctx.device().str(), " context"));
  cuda_entry::launch_graph(*ctx.cuda_state(), *graph_);
}

size_t CudaGraph::nodes() const { return cuda_entry::graph_nodes(*graph_); }

}  // namespace glassbox
