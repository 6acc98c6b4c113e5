// tensor/cuda_graph_cuda.cpp: the CUDA half of tensor/cuda_graph.h (Note
// [Capturing a stream]).
#include <cuda_runtime.h>

#include <exception>
#include <string>
#include <string_view>

#include "tensor/context_cuda.h"
#include "tensor/cuda_entry.h"
#include "tensor/error.h"

namespace glassbox::cuda_entry {

struct CapturedGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  size_t nodes = 0;
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};

std::shared_ptr<CapturedGraph> capture_graph(const CudaResources& resources, const std::function<void()>& queue) {
  cudaStream_t stream = resources.stream.get();
  CUDA_CHECK(cudaSetDevice(resources.device));
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  auto result = std::make_shared<CapturedGraph>();
  std::exception_ptr thrown;
  try {
    queue();
  } catch (...) {
    thrown = std::current_exception();
  }
  // Ends the capture whatever happened: the stream must leave capture mode
  // before anything else is queued on it.
  const cudaError_t ended = cudaStreamEndCapture(stream, &result->graph);
  if (thrown || ended != cudaSuccess) {
    (void)cudaGetLastError();  // the refusal is reported here, not by the next launch
    constexpr std::string_view kContext = "while capturing a CUDA graph: ";
    if (thrown) rethrow_with_context(thrown, kContext);  // as the kind of error the step threw
    throw Error(cat(kContext, "cudaStreamEndCapture: ", cudaGetErrorString(ended)));
  }
  CUDA_CHECK(cudaGraphGetNodes(result->graph, nullptr, &result->nodes));
  if (const cudaError_t made = cudaGraphInstantiate(&result->exec, result->graph, 0); made != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(cat("while capturing a CUDA graph: cudaGraphInstantiate: ", cudaGetErrorString(made)));
  }
  return result;
}

void launch_graph(const CudaResources& resources, const CapturedGraph& graph) {
  CUDA_CHECK(cudaGraphLaunch(graph.exec, resources.stream.get()));
}

size_t graph_nodes(const CapturedGraph& graph) { return graph.nodes; }

}  // namespace glassbox::cuda_entry
