// optim/train_step.h: one training step, the unit every program repeats:
//   forward in the training phase (the loss included), backward with the
//   parameter gradients replaced by this step's (Graph::ParamGrads::kReplace:
//   no zeroing pass), and the optimizer's update.
// bench_nets' train_step mode, `glassbox train`, `glassbox max-batch` and the
// tests all call this one function, so they time, train and test the same thing.
// Data-parallel training is the same step with `sync`: backward then averages
// the gradients over every rank, bucket by bucket (optim/gradient_sync.h),
// before the update. An fp16 graph's step takes a `scaler`
// (optim/loss_scaler.h): backward's gradients are scaled, then divided back,
// and a step whose gradients overflowed skips its update; on a CUDA device
// the update kernel reads that decision from device memory, so the step
// still never waits for the device.
#pragma once

#include "graph/graph.h"
#include "optim/gradient_sync.h"
#include "optim/loss_scaler.h"
#include "optim/sgd.h"
#include "optim/step_replay.h"

namespace glassbox {

// Queued on ctx's stream; returns without waiting for the device. Read the
// loss afterwards with graph.loss(ctx) or checked_loss (graph/finite_check.h):
// with `sync`, it is this rank's loss, on this rank's part of the batch, and
// on a GPU call sync->settle(ctx) first, so that a rank that died is found
// within the deadline rather than waited for by the read (Note [Watching the
// previous step's reductions], optim/communicator_nccl_cuda.cpp).
// Throws ConfigError for an fp16 graph without a scaler, or a scaler on
// another precision's graph.
void train_step(Context& ctx, Graph& graph, Sgd& optimizer, GradientSync* sync = nullptr,
                LossScaler* scaler = nullptr);

// The same step (one process, no GradientSync) through `replay` (Note
// [Replaying a step], optim/step_replay.h): eager for the warm-up, then
// captured once and replayed as one CUDA graph launch while the graph, the
// optimizer and its settings and the scaler stay as they were. Returns
// without waiting for the device. ConfigError where the graph's steps cannot
// be replayed (check_replayable) and as above.
void train_step(Context& ctx, Graph& graph, Sgd& optimizer, StepReplay& replay, LossScaler* scaler = nullptr);

}  // namespace glassbox
