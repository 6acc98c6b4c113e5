// tools/cli/step_memory.cpp
#include "tools/cli/step_memory.h"

#include "tools/cli/synthetic_training.h"

namespace glassbox::cli {

StepMemory measure_train_step(const NetSpec& net, int batch, const Device& device, const CompileOptions& options,
                              int64_t limit) {
  Context ctx = Context::on(device);
  if (limit > 0) ctx.allocator().set_limit(limit);
  SyntheticTraining run(ctx, net, batch, options);
  const float loss = run.step();
  return {ctx.memory(), run.graph().memory_plan(), loss};
}

}  // namespace glassbox::cli
