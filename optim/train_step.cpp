// optim/train_step.cpp
#include "optim/train_step.h"

namespace glassbox {

namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.raw() == b.raw() && a.bytes() == b.bytes() && a.dtype() == b.dtype();
}

// An Sgd made for another graph's buffers would update those, and a 16-bit
// graph's forward reads its working copy: an optimizer without it leaves
// every step computing with the first step's weights.
void check_optimizer_of(const Graph& graph, const Sgd& optimizer) {
  if (!same_tensor(optimizer.params(), graph.parameters()) || !same_tensor(optimizer.grads(), graph.gradients())) {
    throw ConfigError(
        "train_step: the optimizer updates other buffers than this graph's parameters() and gradients() "
        "(make the Sgd from the graph it steps)");
  }
  if (!same_tensor(optimizer.working(), graph.working_parameters())) {
    throw ConfigError(cat("train_step: this ", flag_name_of(graph.compiled_precision()), " graph's forward reads ",
                          graph.working_parameters().defined() ? "its 16-bit working_parameters(), which the optimizer "
                                                                 "does not write (pass them to the Sgd)"
                                                               : "no 16-bit copy, and the optimizer writes one"));
  }
}

// Both forms check before they touch the graph: the replayed one points
// the graph at the scaler's scale first.
void check_step_arguments(const Graph& graph, const Sgd& optimizer, const LossScaler* scaler) {
  check_optimizer_of(graph, optimizer);
  const bool fp16 = graph.compiled_precision() == Precision::kFp16;
  if (fp16 != (scaler != nullptr)) {
    throw ConfigError(fp16 ? "train_step: an fp16 graph needs a LossScaler (optim/loss_scaler.h)"
                           : cat("train_step: loss scaling is for fp16 graphs; this one is ",
                                 flag_name_of(graph.compiled_precision())));
  }
}

}  // namespace

void train_step(Context& ctx, Graph& graph, Sgd& optimizer, GradientSync* sync, LossScaler* scaler) {
  check_step_arguments(graph, optimizer, scaler);
  if (sync) sync->step_started();
  graph.forward(ctx, Phase::kTraining);
  if (scaler) scaler->before_backward(graph);
  // The gradients become this step's (Note [A step's backward writes the
  // parameter gradients], graph/graph.h): no zero_grad.
  if (sync) {
    sync->backward(ctx, graph, Graph::ParamGrads::kReplace);
  } else {
    graph.backward(ctx, Graph::ParamGrads::kReplace);
  }
  // The update is the step's last span (graph/step_spans.h): timed, traced
  // and its kernels attributed like a layer's passes.
  StepSpans& spans = graph.step_spans();
  if (spans.active()) spans.begin(-1, "sgd", Pass::kOptimizer);
  const UpdateGate gate = scaler ? scaler->after_backward(ctx, graph.gradients()) : UpdateGate{};
  if (gate.device_flag != nullptr) {
    optimizer.step(ctx, gate.device_flag);  // the update kernel reads the flag: applies or skips on the device
  } else if (gate.applies) {
    optimizer.step(ctx);
  }
  if (spans.active()) spans.end();
  if (sync) sync->step_finished();
}

void train_step(Context& ctx, Graph& graph, Sgd& optimizer, StepReplay& replay, LossScaler* scaler) {
  check_step_arguments(graph, optimizer, scaler);
  check_replayable(graph);
  // Points the graph at the scaler's device scale before the key is taken,
  // as the step itself does: the first step's key is then every step's.
  if (scaler) scaler->before_backward(graph);
  replay.run(ctx, train_step_key(ctx, graph, optimizer, scaler),
             [&] { train_step(ctx, graph, optimizer, nullptr, scaler); });
}

}  // namespace glassbox
