// graph/graph.h: a static network graph, compiled once and run many times.
//
// A GraphBuilder (graph/builder.h) adds nodes in order, so the node list is
// already topological: every node's inputs come before it. compile() then fixes
// everything a step needs: parameters (one flat buffer, initialised from a
// seed), gradients (one flat buffer, same layout), every activation and
// activation gradient (one arena each), the shared workspace, and each layer's
// descriptors and algorithms. forward() and backward() then allocate nothing,
// create nothing and never wait for the device (unless asked to, for debugging).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "layers/layer.h"
#include "tensor/context.h"
#include "tensor/event_timer.h"

namespace glassbox {

// A node's output, as the builder hands it out.
struct Value {
  int node = -1;
  uint32_t graph_id = 0;  // which builder made it, to catch values from another graph
};

struct Node {
  std::string name;
  std::unique_ptr<Layer> layer;  // null for a graph input
  std::vector<int> inputs;       // producer node indices
  Shape shape;
  DType dtype = DType::kFloat32;

  // Set by compile().
  Tensor value;                           // the output (or, for an input, the data)
  Tensor grad;                            // d loss / d value; undefined where none is needed
  std::vector<Tensor> input_values;       // the producers' values, in input order
  std::vector<Tensor> input_grads;        // the producers' grads (undefined for graph inputs)
  std::vector<GradMode> input_grad_modes; // write for the first gradient to reach a producer, then add
  std::vector<Tensor> params;             // views into the flat parameter buffer
  std::vector<Tensor> param_grads;        // views into the flat gradient buffer

  bool is_input() const { return layer == nullptr; }
};

struct CompileOptions {
  PrepareOptions layers;                 // algorithm search, workspace limit
  Precision precision = Precision::kFp32;
  uint64_t seed = 1;                     // parameter initialisation
  bool layer_timing = false;             // record one mark per layer boundary (layer_times())
  bool sync_each_layer = false;          // debug: wait after every layer to localise device faults
};

// Per-layer times of the last forward and backward, in milliseconds.
struct LayerTime {
  int node = -1;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
};

class Graph {
 public:
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(std::string_view name) const;  // throws ConfigError listing the names
  int loss_node() const { return loss_; }
  int64_t parameter_count() const;  // learnable scalars
  int64_t macs() const;             // multiply-accumulates of one forward pass (whole batch)
  int batch() const;                // dimension 0 of the first input

  void compile(Context& ctx, const CompileOptions& options = {});
  bool compiled() const { return compiled_; }

  // The tensor of a graph input, to fill before forward(). Throws ConfigError
  // naming the inputs if there is none of that name.
  const Tensor& input(std::string_view name) const;

  void forward(Context& ctx, Phase phase = Phase::kTraining);
  void zero_grad(Context& ctx);  // gradients accumulate; a step starts from zero
  void backward(Context& ctx);
  float loss(Context& ctx) const;  // waits for the device

  const Tensor& parameters() const { return parameters_; }  // flat, all learnable parameters
  const Tensor& gradients() const { return gradients_; }    // flat, same layout

  // Times of the last forward and backward per layer (compile with
  // layer_timing). Reading waits for the device.
  std::vector<LayerTime> layer_times() const;

 private:
  friend class GraphBuilder;
  Graph(std::vector<Node> nodes, int loss);

  void check_context(const Context& ctx, std::string_view what) const;
  void plan_memory(Context& ctx);
  void after_layer(Context& ctx, const Node& node, std::string_view pass) const;

  std::vector<Node> nodes_;
  std::vector<int> layers_;  // indices of layer nodes, in topological order
  int loss_ = -1;
  bool compiled_ = false;
  Device device_;
  CompileOptions options_;
  Tensor parameters_;
  Tensor gradients_;
  std::vector<Tensor> arenas_;  // activations, activation gradients, inputs
  std::unique_ptr<EventTimer> forward_marks_;   // mark k: before layers_[k] (k = L: after the last)
  std::unique_ptr<EventTimer> backward_marks_;  // mark k: before the backward of layers_[L-1-k]
};

}  // namespace glassbox
