// graph/graph_spans.cpp: the graph's side of step spans (graph/step_spans.h):
// which pass a layer's backward starts in, and the spans read back as spans
// and as per-layer times.
#include "graph/graph.h"
#include "tensor/error.h"

namespace glassbox {

// The pass a layer's backward starts in: backward-data where it splits and
// an input gradient is wanted, backward-weights where it splits and none is
// (the first layer: its input is the data), else one whole backward.
Pass Graph::backward_pass(const Node& node) const {
  if (!node.layer->splits_backward()) return Pass::kBackward;
  for (const Tensor& grad : node.input_grads) {
    if (grad.defined()) return Pass::kBackwardData;
  }
  return Pass::kBackwardWeights;
}

std::vector<SpanTime> Graph::spans() const {
  check_not_moved("spans");
  if (!compiled_ || !options_.layer_timing) throw Error("spans: compile with CompileOptions::layer_timing = true");
  return spans_->read();
}

StepSpans& Graph::step_spans() {
  require_compiled("step_spans");
  return *spans_;
}

std::vector<LayerTime> Graph::layer_times() const {
  check_not_moved("layer_times");
  if (!compiled_ || !options_.layer_timing) throw Error("layer_times: compile with CompileOptions::layer_timing = true");
  std::vector<LayerTime> times;
  std::vector<int> row_of(nodes_.size(), -1);
  for (int index : layers_) {
    row_of[static_cast<size_t>(index)] = static_cast<int>(times.size());
    times.push_back({.node = index});
  }
  for (const SpanTime& span : spans_->read()) {
    if (span.node < 0) continue;  // not a layer's (the optimizer)
    LayerTime& t = times[static_cast<size_t>(row_of[static_cast<size_t>(span.node)])];
    if (span.pass == Pass::kForward) t.forward_ms += span.duration_ms;
    if (span.pass != Pass::kForward && span.pass != Pass::kOptimizer) t.backward_ms += span.duration_ms;
    if (span.pass == Pass::kBackwardWeights) t.backward_weights_ms += span.duration_ms;
  }
  return times;
}

}  // namespace glassbox
