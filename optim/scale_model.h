// optim/scale_model.h: what a data-parallel step would cost on more devices,
// predicted from one device's measured layer times (`glassbox scale`).
//
// The model, stated so it can be argued with:
//   - Every rank computes what the measured device computed (weak scaling:
//     the batch per rank is fixed), at the measured speed: forward, then
//     backward layer by layer in the measured times, then the optimizer.
//   - Gradients are averaged bucket by bucket exactly as optim/gradient_sync.h
//     does it: buckets in backward order, each started when backward has
//     produced its last gradient, one all-reduce at a time, in bucket order.
//     With overlap, backward goes on meanwhile; without, every bucket starts
//     after backward.
//   - One all-reduce of n bytes over p ranks, on links of bandwidth B (bytes
//     per second, per direction) and latency a (seconds per message), in the
//     alpha-beta model (Hockney 1994; Thakur, Rabenseifner & Gropp 2005):
//       ring: 2 (p - 1) a + 2 (p - 1) / p * n / B
//             (reduce-scatter then all-gather, p - 1 steps each, n/p bytes a step)
//       tree: 2 ceil(log2 p) a + 2 n / B
//             (reduce up then broadcast down a binary tree, pipelined so that
//             each costs about n / B plus one latency per level; NCCL's double
//             binary tree uses both directions of each link to reach this)
//     Each bucket takes the cheaper of the two, as NCCL's tuner would.
//   - Every pair of neighbouring ranks is joined by the same kind of link.
//     Not modelled: contention between communication and computation for
//     memory or SMs, stragglers, the links' congestion, topology beyond one
//     link type, and the all-reduce kernels' own launch overhead.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace glassbox {

struct LinkModel {
  std::string name;          // "NVLink 4", "NDR InfiniBand", "custom"
  double bandwidth_gbps = 0;  // GB/s (1e9 bytes per second), per direction
  double latency_us = 0;      // per message
};

// Per-link defaults, each with its source in the .cpp; throws ConfigError
// for an unknown name, listing nvlink, infiniband and custom.
LinkModel link_model(const std::string& name);

enum class AllReduceAlgorithm { kNone, kRing, kTree };
const char* name_of(AllReduceAlgorithm algorithm);

struct AllReduceCost {
  double seconds = 0;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kNone;  // kNone for one rank
};
double ring_seconds(double bytes, int ranks, const LinkModel& link);
double tree_seconds(double bytes, int ranks, const LinkModel& link);
AllReduceCost allreduce_cost(double bytes, int ranks, const LinkModel& link);  // the cheaper; 0 for one rank

// One device's measured step, in backward order for the layers.
struct MeasuredStep {
  double forward_ms = 0;    // zeroing, forward and the loss
  double optimizer_ms = 0;  // the update (and whatever else is outside the layers)
  struct Layer {
    std::string name;
    double backward_ms = 0;
    size_t gradient_bytes = 0;  // 0 for a layer without parameters
  };
  std::vector<Layer> backward;  // in backward order: the loss layer first
};

struct ScaledBucket {
  size_t bytes = 0;
  double ready_ms = 0;  // from the start of backward
  double start_ms = 0;
  double done_ms = 0;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kNone;
};

struct ScaledStep {
  int ranks = 1;
  double step_ms = 0;
  double compute_ms = 0;    // forward + backward + optimizer: the step of one device
  double allreduce_ms = 0;  // the buckets' all-reduce, one after another
  double exposed_ms = 0;    // of it, after backward had finished
  double efficiency = 1;    // the one-device step / this step
  std::vector<ScaledBucket> buckets;
};

// Buckets formed as plan_buckets (optim/gradient_sync.h) forms them: in
// backward order, closed at a layer boundary once at least bucket_bytes.
ScaledStep scale_step(const MeasuredStep& step, int ranks, const LinkModel& link, size_t bucket_bytes, bool overlap);

}  // namespace glassbox
