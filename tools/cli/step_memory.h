// tools/cli/step_memory.h: what one training step of a network holds, found by
// running one (for `glassbox summary --memory` and `glassbox max-batch`).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "nets/registry.h"

namespace glassbox::cli {

struct StepMemory {
  MemoryStats memory;  // the allocator's peak over compile and the step, by category
  MemoryPlan plan;     // how the activations were placed
  float loss = 0.0f;
};

// Builds `net` at `batch`, compiles it on `device` for training (with
// `options`: precision and the other compile flags), adds SGD with
// momentum (so there is optimizer state), fills a synthetic batch and runs
// one step: zero gradients, forward, backward, update, the loss checked.
// `limit` (bytes, 0 for none) caps what the device may hand out. Throws
// OutOfMemoryError when the batch does not fit, ConfigError when it is too
// large for the network's shapes, NumericalError for a non-finite loss.
StepMemory measure_train_step(const NetSpec& net, int batch, const Device& device, const CompileOptions& options,
                              int64_t limit);

}  // namespace glassbox::cli
