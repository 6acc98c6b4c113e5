// data/synthetic.h: the synthetic data source: one batch, made once and left
// on the device. Images are drawn from U(-1, 1) with a fixed seed (never zeros,
// which would hide unwritten outputs and can run faster than real data);
// labels are n % classes, fixed.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace glassbox {

// Fills the graph's "images" and "labels" inputs (compile the graph first).
void fill_synthetic_batch(Context& ctx, const Graph& graph, int classes, uint64_t seed = 42);

}  // namespace glassbox
