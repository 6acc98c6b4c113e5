// tensor/cuda_graph_cuda.cpp: the CUDA half of tensor/cuda_graph.h (Note
// [Capturing a stream]).
#include <cuda_runtime.h>

#include <exception>
#include <optional>
#include <string>

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
  std::optional<std::string> failure;
  try {
    queue();
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "the step threw something that is not a std::exception";
  }
  // Ends the capture whatever happened: the stream must leave capture mode
  // before anything else is queued on it.
  const cudaError_t ended = cudaStreamEndCapture(stream, &result->graph);
  if (failure || ended != cudaSuccess) {
    (void)cudaGetLastError();  // the refusal is reported here, not by the next launch
    throw Error(cat("while capturing a CUDA graph: ",
                    failure ? *failure : cat("cudaStreamEndCapture: ", cudaGetErrorString(ended))));
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
