// optim/train_step.cpp
#include "optim/train_step.h"

namespace glassbox {

void train_step(Context& ctx, Graph& graph, Sgd& optimizer) {
  graph.zero_grad(ctx);  // parameter gradients accumulate (layers/layer.h)
  graph.forward(ctx, Phase::kTraining);
  graph.backward(ctx);
  optimizer.step(ctx);
}

}  // namespace glassbox
