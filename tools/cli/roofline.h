// tools/cli/roofline.h: the roofline arithmetic of `glassbox time`.
//
// A pass that does F FLOPs and moves B bytes in t seconds achieves F/t FLOP/s
// and B/t bytes/s; its arithmetic intensity is I = F/B (FLOP per byte). On a
// device that computes at most P FLOP/s and moves at most W bytes/s, the pass
// can go no faster than min(P, I*W) FLOP/s (the roofline, Williams, Waterman
// and Patterson, 2009), that is, it takes at least
//     t_min = max(F/P, B/W)
// seconds. Its fraction of the roofline is t_min / t, which equals
// (F/t) / min(P, I*W) where F > 0, and for a memory-bound layer that counts no
// FLOPs (ReLU, pooling: Layer::flops) is its achieved bandwidth over W.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "tensor/pass.h"

namespace glassbox::cli {

struct Peak {
  double flops_per_s = 0.0;
  double bytes_per_s = 0.0;
};

// One pass of one layer: its mean time and its analytic work and traffic.
struct PassCost {
  Pass pass = Pass::kForward;
  double ms = 0.0;
  int64_t flops = 0;
  int64_t bytes = 0;
};

// 0 where the time is not positive (a pass too fast for the clock).
double flops_per_s(const PassCost& cost);
double bytes_per_s(const PassCost& cost);
// FLOP per byte; 0 where nothing moves.
double intensity(const PassCost& cost);
// min(P, I*W): the most FLOP/s a pass of this intensity can reach.
double attainable_flops_per_s(const PassCost& cost, const Peak& peak);
// max(F/P, B/W) / t, in [0, 1] unless the model undercounts; 0 where the time
// is not positive or the peaks are unknown (zero).
double roofline_fraction(const PassCost& cost, const Peak& peak);

// The analytic work and traffic of `pass` of node `index` (Layer::flops,
// Layer::bytes_moved); none where another layer runs that pass (a fused ReLU
// or residual add, graph/fusion.h), whose kernels count it. `time` and
// `trace` report the same figures through this.
PassCost pass_cost(const Graph& graph, int index, Pass pass, double ms);

// The passes a layer ran in a step, with `time`'s means: forward; then, for a
// layer that splits its backward (Layer::splits_backward), backward-data
// (unless its input is the graph's data, which needs no gradient) and
// backward-weights; else the whole backward. A graph compiled for inference
// ran the forward alone.
std::vector<PassCost> layer_passes(const Graph& graph, const LayerTime& time);

}  // namespace glassbox::cli
