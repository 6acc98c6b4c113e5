// optim/gradient_sync.h: averaging the gradients of a data-parallel step over
// every rank, overlapped with backward (DESIGN.md section 3, step 5).
//
// The flat gradient buffer is laid out in graph order, and backward runs in
// reverse, so gradients are finished from the end of the buffer towards its
// start. The buffer is cut into buckets at layer boundaries, walking backward
// order: a bucket closes once it holds at least `bucket_bytes` (a layer's
// parameters are never split, so a bucket can be larger; the last one,
// holding the first layers, can be smaller). Buckets partition the whole
// buffer, alignment gaps included (they hold zeros on every rank).
//
// With overlap on, a bucket's all-reduce starts as soon as backward has queued
// the layer that completes it (on CUDA it runs on the communicator's stream,
// ordered after that layer; on the CPU, MPI's non-blocking all-reduce, advanced
// after every later layer), while backward goes on with the layers before it.
// The optimizer then waits for every bucket. With overlap off, all buckets
// start after the whole backward: the baseline that shows what overlap saves.
//
// What each step costs is measured, not modelled (the model is `glassbox
// scale`): the time from the end of backward until the last bucket is reduced
// is the communication backward did not hide ("exposed").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "optim/communicator.h"
#include "tensor/event_timer.h"

namespace glassbox {

struct GradientSyncOptions {
  size_t bucket_bytes = size_t{25} << 20;  // PyTorch DDP's default bucket_cap_mb is 25 too
  bool overlap = true;
};

struct GradientBucket {
  size_t begin = 0;  // bytes into the flat gradient buffer
  size_t end = 0;
  int ready_after = -1;    // backward position of the layer that completes it
  std::string first_layer;  // the first of its layers backward reaches
  std::string last_layer;   // the layer that completes it
  size_t bytes() const { return end - begin; }
};

// Buckets in the order backward completes them (the end of the buffer first).
// Throws ConfigError for bucket_bytes 0.
std::vector<GradientBucket> plan_buckets(const Graph& graph, size_t bucket_bytes);

// Where one data-parallel step's time went, in milliseconds. The parts add
// up to the step: forward + backward + exposed + optimizer.
struct SyncTimes {
  double forward_ms = 0.0;    // zeroing the gradients, forward and the loss
  double backward_ms = 0.0;   // backward, with the buckets' all-reduce started in it (overlap on)
  double exposed_ms = 0.0;    // after backward, until every bucket was averaged: communication not hidden
  double optimizer_ms = 0.0;  // the update
  double allreduce_ms = 0.0;  // time with at least one all-reduce in flight, hidden or not
  std::vector<ReductionTime> buckets;  // in bucket order, from the start of backward

  // Adds `weight` x another step's times (1 for a sum, 1/steps for a mean).
  void accumulate(const SyncTimes& step, double weight);
};

class GradientSync {
 public:
  // `graph` compiled for training on ctx's device; `communicator` outlives this.
  GradientSync(Context& ctx, const Graph& graph, Communicator& communicator, GradientSyncOptions options);

  // graph.backward(ctx, param_grads), each bucket's average started as it completes (or
  // all after backward, with overlap off), then waits for all of them:
  // everything queued on ctx's stream afterwards (the optimizer) sees the
  // averaged gradients. Throws CommunicationError on a failed or late rank.
  void backward(Context& ctx, Graph& graph, Graph::ParamGrads param_grads = Graph::ParamGrads::kAccumulate);

  // train_step (optim/train_step.h) marks where its step starts and ends,
  // so that last_times() can split the whole step.
  void step_started() { marks_.record(kStepStart); }
  void step_finished() { marks_.record(kStepEnd); }
  // The last step's times (reading waits for the device).
  SyncTimes last_times();
  // The host waits, with the communicator's deadline, for the reductions of
  // the steps queued so far (Communicator::settle): before it reads what the
  // last step computed.
  void settle(Context& ctx) { communicator_.settle(ctx); }

  const std::vector<GradientBucket>& buckets() const { return buckets_; }
  const GradientSyncOptions& options() const { return options_; }
  Communicator& communicator() const { return communicator_; }

 private:
  void start(Context& ctx, const Graph& graph, size_t bucket);

  Communicator& communicator_;
  GradientSyncOptions options_;
  std::vector<GradientBucket> buckets_;
  std::vector<std::vector<size_t>> ready_at_;  // per backward position: the buckets it completes
  enum Mark { kStepStart, kBackwardStart, kBackwardEnd, kReduced, kStepEnd, kMarks };
  EventTimer marks_;
};

}  // namespace glassbox
