// tools/cli/step_memory.cpp
#include "tools/cli/step_memory.h"

#include "data/synthetic.h"
#include "graph/finite_check.h"
#include "optim/train_step.h"

namespace glassbox::cli {

StepMemory measure_train_step(const NetSpec& net, int batch, const Device& device, Precision precision,
                              int64_t limit) {
  Graph graph = build_net(net, batch);
  Context ctx = Context::on(device);
  if (limit > 0) ctx.allocator().set_limit(limit);
  CompileOptions options;
  options.precision = precision;
  graph.compile(ctx, options);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 1e-4f, .momentum = 0.9f, .weight_decay = 5e-4f});
  fill_synthetic_batch(ctx, graph, net.classes);
  train_step(ctx, graph, sgd);
  const float loss = checked_loss(ctx, graph, 1);
  return {ctx.memory(), graph.memory_plan(), loss};
}

}  // namespace glassbox::cli
