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
  optimizer.step(ctx);
  if (sync) sync->step_finished();
}

}  // namespace glassbox
