// optim/train_step.cpp
#include "optim/train_step.h"

namespace glassbox {

void train_step(Context& ctx, Graph& graph, Sgd& optimizer, GradientSync* sync) {
  if (sync) sync->step_started();
  graph.zero_grad(ctx);  // parameter gradients accumulate (layers/layer.h)
  graph.forward(ctx, Phase::kTraining);
  if (sync) {
    sync->backward(ctx, graph);
  } else {
    graph.backward(ctx);
  }
  // The update is the step's last span (graph/step_spans.h): timed, traced
  // and its kernels attributed like a layer's passes.
  StepSpans& spans = graph.step_spans();
  if (spans.active()) spans.begin(-1, "sgd", Pass::kOptimizer);
  optimizer.step(ctx);
  if (spans.active()) spans.end();
  if (sync) sync->step_finished();
}

}  // namespace glassbox
