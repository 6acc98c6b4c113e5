// optim/train_step.h: one training step, the unit every program repeats:
//   zero the gradients, forward in the training phase (the loss included),
//   backward, and the optimizer's update.
// bench_nets' train_step mode, `glassbox train`, `glassbox max-batch` and the
// tests all call this one function, so they time, train and test the same thing.
#pragma once

#include "graph/graph.h"
#include "optim/sgd.h"

namespace glassbox {

// Queued on ctx's stream; returns without waiting for the device. Read the
// loss afterwards with graph.loss(ctx) or checked_loss (graph/finite_check.h).
void train_step(Context& ctx, Graph& graph, Sgd& optimizer);

}  // namespace glassbox
