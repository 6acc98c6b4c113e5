// bench/support/data_parallel_counters.cpp
#include "bench/support/data_parallel_counters.h"

#include <map>
#include <utility>

#include "bench/support/google_benchmark.h"

namespace glassbox::bench {
namespace {

std::map<std::pair<std::string, int>, double>& rank_alone_steps() {
  static std::map<std::pair<std::string, int>, double> steps;  // (net, batch) -> mean seconds
  return steps;
}

}  // namespace

void DataParallelCounters::add(const SyncTimes& times) {
  ++steps_;
  sum_.accumulate(times, 1.0);
}

void DataParallelCounters::report(benchmark::State& state, const GradientSync& sync, const std::string& net,
                                  int batch_per_rank, double mean_step_seconds) const {
  const int ranks = sync.communicator().size();
  const double steps = steps_ > 0 ? steps_ : 1;
  state.counters["images/s"] = ranks * batch_per_rank / mean_step_seconds;
  state.counters["ranks"] = ranks;
  state.counters["batch_per_rank"] = batch_per_rank;
  state.counters["global_batch"] = ranks * batch_per_rank;
  state.counters["forward_ms"] = sum_.forward_ms / steps;
  state.counters["backward_ms"] = sum_.backward_ms / steps;
  state.counters["exposed_ms"] = sum_.exposed_ms / steps;
  state.counters["optimizer_ms"] = sum_.optimizer_ms / steps;
  state.counters["allreduce_ms"] = sum_.allreduce_ms / steps;
  state.counters["buckets"] = static_cast<double>(sync.buckets().size());
  state.counters["bucket_mb"] = static_cast<double>(sync.options().bucket_bytes) / (1 << 20);
  const auto alone = rank_alone_steps().find({net, batch_per_rank});
  if (alone != rank_alone_steps().end()) state.counters["efficiency"] = alone->second / mean_step_seconds;
}

void remember_rank_alone(const std::string& net, int batch, double mean_step_seconds) {
  rank_alone_steps()[{net, batch}] = mean_step_seconds;
}

void add_job_context(const Communicator& communicator, const GradientSyncOptions& sync, int steps,
                     int threads_per_rank) {
  add_context("ranks", std::to_string(communicator.size()));
  add_context("collective", std::string(communicator.backend()));
  add_context("gradient_buckets",
                              cat(static_cast<double>(sync.bucket_bytes) / (1 << 20), " MiB, ",
                                  sync.overlap ? "overlapped with backward" : "all-reduced after backward"));
  add_context("steps_per_benchmark", cat(steps, " on every rank (Note [Fixed step counts across ranks])"));
  add_context("cpu_threads_per_rank", std::to_string(threads_per_rank));
}


}  // namespace glassbox::bench
