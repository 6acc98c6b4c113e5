// tools/cli/synthetic_training.cpp
#include "tools/cli/synthetic_training.h"

#include "data/synthetic.h"
#include "graph/finite_check.h"
#include "optim/train_step.h"

namespace glassbox::cli {
namespace {

Graph compiled(Context& ctx, Graph graph, const CompileOptions& options) {
  graph.compile(ctx, options);
  return graph;
}

}  // namespace

SyntheticTraining::SyntheticTraining(Context& ctx, const NetSpec& net, int batch, const CompileOptions& options)
    : ctx_(ctx),
      graph_(compiled(ctx, build_net(net, batch), options)),
      sgd_(ctx, graph_.parameters(), graph_.gradients(), kBenchmarkSgd, graph_.working_parameters()) {
  if (options.precision == Precision::kFp16) scaler_.emplace(ctx, LossScaleOptions{});
  fill_synthetic_batch(ctx, graph_, net.classes);
}

void SyntheticTraining::warm_up(int steps) {
  for (int i = 0; i < steps; ++i) step();
}

float SyntheticTraining::step() {
  train_step();
  return check_loss();
}

void SyntheticTraining::train_step() {
  glassbox::train_step(ctx_, graph_, sgd_, nullptr, scaler_ ? &*scaler_ : nullptr);
  ++steps_run_;
}

float SyntheticTraining::check_loss() { return checked_loss(ctx_, graph_, steps_run_); }

}  // namespace glassbox::cli
