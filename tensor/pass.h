// tensor/pass.h: the passes of a training step, the unit in which Glassbox
// times, traces and attributes kernels: each layer's forward, its backward
// (split into backward-data and backward-weights where the layer computes
// both separately), and the optimizer.
#pragma once

#include <cstdint>
#include <string_view>

namespace glassbox {

enum class Pass {
  kForward,
  kBackward,         // a layer's whole backward, where it is one computation (batch norm, ReLU, pooling)
  kBackwardData,     // dL/dx: the part of a split backward that comes first
  kBackwardWeights,  // dL/dW and dL/db: the rest of a split backward
  kOptimizer,        // the parameter update
};

// "forward", "backward", "backward-data", "backward-weights", "optimizer".
std::string_view pass_name(Pass pass);

// Told by a layer's backward when it moves from its input gradient to its
// parameter gradients (Context::switch_pass): graph/step_spans.h listens, so
// that the two halves are timed, traced and attributed apart.
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  virtual void switch_pass(Pass pass) = 0;
};

// Hears each span of a step (graph/step_spans.h) begin and end, in launch
// order on the host, around the launches of that span: the CUPTI collector
// (tensor/kernel_trace.h) pushes `id` as an external correlation id.
class SpanListener {
 public:
  virtual ~SpanListener() = default;
  virtual void span_begin(uint64_t id) = 0;
  virtual void span_end(uint64_t id) = 0;
};

}  // namespace glassbox
