// optim/train_step.cpp
#include "optim/train_step.h"

namespace glassbox {

void train_step(Context& ctx, Graph& graph, Sgd& optimizer, GradientSync* sync) {
  if (sync) sync->step_started();
  graph.forward(ctx, Phase::kTraining);
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
  optimizer.step(ctx);
  if (spans.active()) spans.end();
  if (sync) sync->step_finished();
}

}  // namespace glassbox
