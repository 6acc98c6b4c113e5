// tools/cli/synthetic_training.h: what every command that times or traces
// train steps on the fixed synthetic batch does first (trace, kernels, sweep,
// scale, max-batch): build the network at a batch, compile it, fill the batch
// (data/synthetic.h), make the benchmarks' SGD (kBenchmarkSgd, optim/sgd.h),
// and run steps whose every loss is read and checked, so that a run going to
// NaN stops with the step's number instead of timing garbage.
//
//   SyntheticTraining run(ctx, net, batch, options);
//   run.warm_up(2);
//   run.step();                        // one train step, its loss checked
//   run.train_step(); ...; run.check_loss();   // the same, with work in between
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "nets/registry.h"
#include <optional>

#include "optim/loss_scaler.h"
#include "optim/sgd.h"
#include "tensor/context.h"

namespace glassbox::cli {

class SyntheticTraining {
 public:
  // `ctx` outlives this. Throws what build_net and compile throw
  // (OutOfMemoryError where the batch does not fit).
  SyntheticTraining(Context& ctx, const NetSpec& net, int batch, const CompileOptions& options);

  void warm_up(int steps);
  // train_step() then check_loss(); returns the loss.
  float step();
  // One train step (forward, backward, SGD), queued: the loss is not read.
  void train_step();
  // Reads the last step's loss; throws NumericalError naming the step if it is not finite.
  float check_loss();

  Graph& graph() { return graph_; }
  int64_t steps_run() const { return steps_run_; }

 private:
  Context& ctx_;
  Graph graph_;
  Sgd sgd_;
  std::optional<LossScaler> scaler_;  // fp16's
  int64_t steps_run_ = 0;
};

}  // namespace glassbox::cli
