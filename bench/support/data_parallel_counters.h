// bench/support/data_parallel_counters.h: what bench_nets reports for a
// data-parallel train step under mpirun, and what makes it safe to time one.
//
// <Net>/train_step/batch:<N>/ranks:<R> counters, each a mean over the timed steps:
//   images/s          all ranks together: R x N / step time
//   ranks, batch_per_rank, global_batch
//   forward_ms, backward_ms, exposed_ms, optimizer_ms: the step's split
//     (optim/gradient_sync.h); exposed_ms is the all-reduce time backward did not hide
//   allreduce_ms      time with an all-reduce in flight, hidden or not
//   buckets, bucket_mb the gradient buckets
//   efficiency        the step of each rank alone (<Net>/train_step/batch:<N>,
//                     same run, every rank stepping at once without communication)
//                     divided by the data-parallel step: 1.0 is perfect scaling.
//                     Absent when the filter left the rank-alone run out.
//
// In a job of several ranks every benchmark runs --steps= timed steps
// (default kDataParallelSteps) on every rank: Note [Fixed step counts across
// ranks] (bench/support/rank_reporting.h).
#pragma once

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "optim/gradient_sync.h"

namespace glassbox::bench {

inline constexpr int kDataParallelSteps = 20;

class DataParallelCounters {
 public:
  void add(const SyncTimes& times);
  // Sets the counters above on `state` (mean_step_seconds: the timed mean).
  void report(benchmark::State& state, const GradientSync& sync, const std::string& net, int batch_per_rank,
              double mean_step_seconds) const;

 private:
  int steps_ = 0;
  SyncTimes sum_;
};

// The mean step of <net> at <batch> with each rank alone, for the efficiency.
void remember_rank_alone(const std::string& net, int batch, double mean_step_seconds);

// The job in Google Benchmark's context block: ranks, backend, buckets,
// overlap, steps and CPU threads per rank.
void add_job_context(const Communicator& communicator, const GradientSyncOptions& sync, int steps,
                     int threads_per_rank);

}  // namespace glassbox::bench
