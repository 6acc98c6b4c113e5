// optim/scale_model.cpp
#include "optim/scale_model.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"

namespace glassbox {

LinkModel link_model(const std::string& name) {
  // NVLink 4 (H100 SXM): 18 links of 25 GB/s each way, 450 GB/s per direction
  // per GPU (NVIDIA's H100 datasheet gives the 900 GB/s of both directions).
  if (name == "nvlink") return {"NVLink 4", 450.0, 3.0};
  // NDR InfiniBand: 400 Gb/s per port, 50 GB/s per direction, one port per
  // GPU as in a DGX H100.
  if (name == "infiniband") return {"NDR InfiniBand", 50.0, 5.0};
  // The latencies (3 and 5 us a message, end to end through NCCL) are this
  // model's assumptions, of the order of a kernel launch and a switch hop;
  // --latency-us replaces them.
  if (name == "custom") return {"custom", 0.0, 0.0};
  throw ConfigError(cat("--link: unknown link '", name, "'; valid: nvlink, infiniband, custom (with --bandwidth-gbps "
                        "and --latency-us)"));
}

const char* name_of(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kNone: return "none";
    case AllReduceAlgorithm::kRing: return "ring";
    case AllReduceAlgorithm::kTree: return "tree";
  }
  return "?";
}

double ring_seconds(double bytes, int ranks, const LinkModel& link) {
  const double p = ranks, alpha = link.latency_us * 1e-6, beta = link.bandwidth_gbps * 1e9;
  return 2.0 * (p - 1.0) * alpha + 2.0 * (p - 1.0) / p * bytes / beta;
}

double tree_seconds(double bytes, int ranks, const LinkModel& link) {
  const double levels = std::ceil(std::log2(static_cast<double>(ranks)));
  return 2.0 * levels * link.latency_us * 1e-6 + 2.0 * bytes / (link.bandwidth_gbps * 1e9);
}

AllReduceCost allreduce_cost(double bytes, int ranks, const LinkModel& link) {
  if (ranks <= 1) return {};
  const double ring = ring_seconds(bytes, ranks, link), tree = tree_seconds(bytes, ranks, link);
  return ring <= tree ? AllReduceCost{ring, AllReduceAlgorithm::kRing} : AllReduceCost{tree, AllReduceAlgorithm::kTree};
}

ScaledStep scale_step(const MeasuredStep& step, int ranks, const LinkModel& link, size_t bucket_bytes, bool overlap) {
  if (ranks < 1) throw ConfigError(cat("scale: a job has at least 1 rank, got ", ranks));
  if (bucket_bytes == 0) throw ConfigError("scale: the gradient bucket size must be at least 1 byte, got 0");
  ScaledStep out{.ranks = ranks};
  // Buckets, each ready when backward has finished its last layer.
  double backward_ms = 0.0;
  ScaledBucket open;
  for (const MeasuredStep::Layer& layer : step.backward) {
    backward_ms += layer.backward_ms;
    if (layer.gradient_bytes == 0) continue;
    open.bytes += layer.gradient_bytes;
    open.ready_ms = backward_ms;
    if (open.bytes >= bucket_bytes) {
      out.buckets.push_back(open);
      open = {};
    }
  }
  if (open.bytes > 0) out.buckets.push_back(open);

  // One all-reduce at a time, in bucket order.
  double free_at = 0.0;
  for (ScaledBucket& bucket : out.buckets) {
    const AllReduceCost cost = allreduce_cost(static_cast<double>(bucket.bytes), ranks, link);
    bucket.algorithm = cost.algorithm;
    bucket.start_ms = std::max(overlap ? bucket.ready_ms : backward_ms, free_at);
    bucket.done_ms = bucket.start_ms + cost.seconds * 1e3;
    free_at = bucket.done_ms;
    out.allreduce_ms += cost.seconds * 1e3;
  }
  out.compute_ms = step.forward_ms + backward_ms + step.optimizer_ms;
  out.exposed_ms = std::max(0.0, free_at - backward_ms);
  out.step_ms = out.compute_ms + out.exposed_ms;
  out.efficiency = out.step_ms > 0 ? out.compute_ms / out.step_ms : 1.0;
  return out;
}

}  // namespace glassbox
