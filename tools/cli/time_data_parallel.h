// tools/cli/time_data_parallel.h: `glassbox time` under mpirun: data-parallel
// train steps (gradients averaged over the ranks, bucket by bucket), the
// step's split into forward, backward, exposed all-reduce and optimizer, and
// one line per bucket: its size, when backward finished it, when it was averaged.
#pragma once

#include <string>

#include "graph/graph.h"
#include "optim/gradient_sync.h"

namespace glassbox::cli {

// Runs `warmup` untimed and `steps` timed data-parallel train steps on every
// rank (the same number everywhere) and returns the report for rank 0 to print.
std::string time_data_parallel(Context& ctx, Graph& graph, Communicator& communicator,
                               const GradientSyncOptions& options, int warmup, int steps);

}  // namespace glassbox::cli
