// layers/conv2d/conv_graph_cuda.h: one convolution pass through cuDNN's graph
// API (the backend descriptors of cudnn_graph.h): its operation graph, the
// engine configurations cuDNN's heuristics offer for it, and the execution
// plan of one of them (Note [Engine configurations],
// layers/conv2d/engine_config.h). Internal to layers/conv2d/: the measured
// search (conv2d_algorithms_cuda.cpp) builds and times them, the layer
// (conv2d_cuda.cpp) runs the chosen plan.
#pragma once

#include <cudnn.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "layers/conv2d/autotune_cache.h"
#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/engine_config.h"

namespace glassbox::conv2d_cuda {

// A cuDNN backend descriptor, destroyed with its owner.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);  // throws LibraryError where cuDNN cannot make one
  BackendDescriptor(BackendDescriptor&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  ~BackendDescriptor();
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The failure of one step of building a graph, a plan or running one:
// cuDNN's status and the step ("finalizing the execution plan").
struct GraphFailure {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::string step;
  std::string text() const;  // "CUDNN_STATUS_NOT_SUPPORTED while finalizing the execution plan"
};

// One pass of a convolution as an operation graph of one node. The pass's
// three tensors keep their uids whatever the pass: x (or dx) 1, w (or dw) 2,
// y (or dy) 3, each described in the problem's layout (graph_tensor_layout)
// with 16-byte alignment, which the graph's 256-byte placement gives
// (kPlanAlignment, graph/memory_plan.h); execute() checks it. `beta` is what
// the pass's output keeps of its old value: 0 writes it, 1 adds into it.
class ConvOperationGraph {
 public:
  // The graph, or the failure of the step that could not be taken.
  static std::shared_ptr<const ConvOperationGraph> build(cudnnHandle_t handle, const ConvProblem& problem,
                                                         Conv2d::Pass pass, DType data, float beta,
                                                         GraphFailure& failure);
  cudnnBackendDescriptor_t get() const { return graph_.get(); }
  cudnnHandle_t handle() const { return handle_; }  // the one it and its plans were built with
  Conv2d::Pass pass() const { return pass_; }
  float beta() const { return beta_; }
  // The engine configurations cuDNN's heuristics offer: mode A's list, then
  // the fallback list (select_engine_configs in engine_config.h takes from them).
  std::vector<std::vector<EngineConfig>> offered_configs(GraphFailure& failure) const;

 private:
  ConvOperationGraph() = default;
  cudnnHandle_t handle_ = nullptr;
  Conv2d::Pass pass_ = Conv2d::Pass::kForward;
  float beta_ = 0.0f;
  // The tensors, the convolution and the operation the graph was built
  // from live as long as the graph.
  std::vector<BackendDescriptor> parts_;
  BackendDescriptor graph_;
};

// An execution plan: one engine configuration of one operation graph.
class GraphPlan {
 public:
  // The plan, or null and the failure (NOT_SUPPORTED for a configuration
  // that does not run this graph, on this GPU, with this beta).
  static std::shared_ptr<const GraphPlan> make(cudnnHandle_t handle,
                                               std::shared_ptr<const ConvOperationGraph> graph,
                                               const EngineConfig& config, GraphFailure& failure);
  const EngineConfig& config() const { return config_; }
  size_t workspace() const { return workspace_; }
  // Runs the pass on the handle's stream: x, w, y are its three tensors by
  // uid (dx, dw, dy in the passes that write them), `workspace` at least
  // workspace() bytes (null where that is 0). Returns cuDNN's status; throws
  // Error naming `layer` for a tensor not 16-byte aligned, or for a handle
  // other than the one the plan was built with (a plan belongs to the
  // context its layer was prepared on: another's handle runs on another
  // stream, and its plan holds the first handle). The variant pack
  // of the pointers is kept for the next call with the same ones (a static
  // graph passes the same every step), so a plan, like its layer, runs on
  // one thread at a time.
  cudnnStatus_t execute(cudnnHandle_t handle, const std::string& layer, const void* x, const void* w,
                        const void* y, void* workspace) const;

 private:
  GraphPlan() = default;
  std::shared_ptr<const ConvOperationGraph> graph_;
  EngineConfig config_;
  std::vector<BackendDescriptor> parts_;  // the engine, the knob choices, the configuration
  BackendDescriptor plan_;
  size_t workspace_ = 0;
  struct Pack {
    std::array<const void*, 4> pointers{};  // x, w, y, workspace
    BackendDescriptor descriptor;
  };
  mutable std::vector<Pack> packs_;  // the last few pointer sets' variant packs
};

}  // namespace glassbox::conv2d_cuda
