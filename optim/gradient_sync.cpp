// optim/gradient_sync.cpp
#include "optim/gradient_sync.h"

#include <algorithm>

namespace glassbox {

std::vector<GradientBucket> plan_buckets(const Graph& graph, size_t bucket_bytes) {
  if (bucket_bytes == 0) throw ConfigError("the gradient bucket size must be at least 1 byte, got 0");
  const size_t total = graph.gradients().bytes();
  std::vector<Graph::ParameterRange> ranges = graph.parameter_ranges();
  std::reverse(ranges.begin(), ranges.end());  // backward order: the end of the buffer first

  std::vector<GradientBucket> buckets;
  GradientBucket open{.end = total};
  for (const Graph::ParameterRange& range : ranges) {
    const std::string& layer = graph.nodes()[static_cast<size_t>(range.node)].name;
    if (open.first_layer.empty()) open.first_layer = layer;
    open.begin = range.begin;
    open.ready_after = range.position;
    open.last_layer = layer;
    if (open.end - open.begin >= bucket_bytes) {
      buckets.push_back(open);
      open = GradientBucket{.end = range.begin};
    }
  }
  if (!open.first_layer.empty()) buckets.push_back(open);
  // The bytes before the first layer's parameters (none today: the buffer
  // starts with them) still belong to a bucket, so that the buckets cover it.
  if (!buckets.empty()) buckets.back().begin = 0;
  return buckets;
}

GradientSync::GradientSync(Context& ctx, const Graph& graph, Communicator& communicator, GradientSyncOptions options)
    : communicator_(communicator),
      options_(options),
      buckets_(plan_buckets(graph, options.bucket_bytes)),
      marks_(ctx, kMarks) {
  if (graph.compiled_phase() != Phase::kTraining) {
    throw ConfigError("data-parallel training needs a graph compiled for training; this one has no gradients");
  }
  int positions = 0;
  for (const Node& node : graph.nodes()) positions += node.is_input() ? 0 : 1;
  ready_at_.resize(static_cast<size_t>(positions));
  for (size_t b = 0; b < buckets_.size(); ++b) ready_at_[static_cast<size_t>(buckets_[b].ready_after)].push_back(b);
}

void GradientSync::start(Context& ctx, const Graph& graph, size_t bucket) {
  const GradientBucket& b = buckets_[bucket];
  const auto floats = static_cast<int64_t>(b.bytes() / sizeof(float));
  communicator_.start_average(ctx, graph.gradients().view(b.begin, Shape{floats}, DType::kFloat32));
}

void GradientSync::backward(Context& ctx, Graph& graph, Graph::ParamGrads param_grads) {
  communicator_.begin_step(ctx);
  marks_.record(kBackwardStart);
  if (options_.overlap) {
    graph.backward(ctx, param_grads, [&](const Node&, int position) {
      for (size_t bucket : ready_at_[static_cast<size_t>(position)]) start(ctx, graph, bucket);
      communicator_.progress();  // Note [Progressing MPI] (optim/communicator.h)
    });
  } else {
    graph.backward(ctx, param_grads);
  }
  marks_.record(kBackwardEnd);
  if (!options_.overlap) {
    for (size_t b = 0; b < buckets_.size(); ++b) start(ctx, graph, b);
  }
  communicator_.wait_all(ctx);
  marks_.record(kReduced);
}

void SyncTimes::accumulate(const SyncTimes& step, double weight) {
  forward_ms += weight * step.forward_ms;
  backward_ms += weight * step.backward_ms;
  exposed_ms += weight * step.exposed_ms;
  optimizer_ms += weight * step.optimizer_ms;
  allreduce_ms += weight * step.allreduce_ms;
  if (buckets.size() < step.buckets.size()) buckets.resize(step.buckets.size());
  for (size_t b = 0; b < step.buckets.size(); ++b) {
    buckets[b].bytes = step.buckets[b].bytes;
    buckets[b].ready_ms += weight * step.buckets[b].ready_ms;
    buckets[b].done_ms += weight * step.buckets[b].done_ms;
  }
}

SyncTimes GradientSync::last_times() {
  SyncTimes times;
  times.forward_ms = marks_.elapsed_ms(kStepStart, kBackwardStart);
  times.backward_ms = marks_.elapsed_ms(kBackwardStart, kBackwardEnd);
  times.exposed_ms = marks_.elapsed_ms(kBackwardEnd, kReduced);
  times.optimizer_ms = marks_.elapsed_ms(kReduced, kStepEnd);
  times.buckets = communicator_.last_times();
  // The union of the in-flight intervals: reductions may run concurrently.
  std::vector<ReductionTime> sorted = times.buckets;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.ready_ms < b.ready_ms; });
  double covered_until = 0.0;
  for (const ReductionTime& r : sorted) {
    const double from = std::max(r.ready_ms, covered_until);
    if (r.done_ms > from) times.allreduce_ms += r.done_ms - from;
    covered_until = std::max(covered_until, r.done_ms);
  }
  return times;
}

}  // namespace glassbox
