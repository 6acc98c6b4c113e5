// optim/step_replay.h: a step queued as a CUDA graph: warmed up eagerly,
// captured once, then replayed (Note [Replaying a step]).
//
// Note [Replaying a step]: a training step of a compiled graph launches the
// same kernels on the same buffers every time, a few hundred of them for
// ResNet-50, and on a GPU the host's launches can take longer than the
// kernels (small networks, 16-bit steps). Captured into a CUDA graph (Note
// [Capturing a stream], tensor/cuda_graph.h), the step is one launch. What
// the capture bakes in, the replay must still hold:
//   - every buffer's address: the graph's (compile() makes new ones), the
//     optimizer's and the loss scaler's (another object has others);
//   - every host scalar: the optimizer's settings, the graph's dropout
//     probability and host-side loss scale;
//   - what the step does (a training step, a forward).
// ReplayKey holds these; a call with another key runs eagerly for the
// warm-up (kernels load and libraries set up on first use, which a capture
// must not see) and is then captured again. What changes from step to step
// lives in device memory, so a replay does what an eager step would: the
// learning rate (Sgd::set_lr writes it there, so a schedule never
// recaptures), fp16's loss scale and its decision to skip a step
// (optim/loss_scaler.h), dropout's generator, batch norm's statistics.
//
// Not replayed: data-parallel steps (GradientSync waits on the host between
// buckets), and steps of a graph that times its layers or traces its kernels
// (the host marks each layer of each step): both ConfigError. NVTX ranges
// are pushed while the step is captured, and a replay is one range-less
// launch in Nsight Systems.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "graph/graph.h"
#include "optim/loss_scaler.h"
#include "optim/sgd.h"
#include "tensor/cuda_graph.h"

namespace glassbox {

struct ReplayKey {
  uint64_t graph = 0;      // Graph::replay_generation()
  int step = 0;            // what the step does: the caller's own numbering
  uint64_t optimizer = 0;  // Sgd::serial(), 0: none
  SgdOptions options{};    // the optimizer's settings but the learning rate, which it reads on the device
  uint64_t scaler = 0;     // LossScaler::serial(), 0: none
  // Context::workspace(): the captured kernels hold its address, and a graph
  // compiled later on the same context may replace it with a larger one.
  // StepReplay::run sets it from its context, whatever the caller gave.
  const void* workspace = nullptr;
  bool operator==(const ReplayKey&) const = default;
};

enum class ReplayAction { kEager, kCapture, kReplay };

// When a call runs eagerly, is captured or replays the capture. Pure: no
// device (tests/test_step_replay.cpp).
class ReplayPolicy {
 public:
  // Throws ConfigError unless warmup >= 1.
  explicit ReplayPolicy(int warmup);
  // The first `warmup` calls with a key run eagerly; the next is captured;
  // then every call replays, until the key changes.
  ReplayAction next(const ReplayKey& key);
  // The capture of the current key succeeded (after kCapture); until it
  // does, calls keep asking to capture.
  void captured() { captured_ = true; }

 private:
  int warmup_;
  std::optional<ReplayKey> key_;
  int eager_calls_ = 0;
  bool captured_ = false;
};

struct ReplayCounts {
  int64_t eager = 0, captures = 0, replays = 0;
  size_t nodes = 0;  // of the last capture
};

class StepReplay {
 public:
  // Throws ConfigError for a CPU context ("--cuda-graph needs ...") or
  // warmup < 1.
  StepReplay(const Context& ctx, int warmup = 1);

  // Runs `queue_step`, which queues one step on ctx's stream without waiting
  // for the device, as the policy says for `key`: eagerly, or captured and
  // launched, or by launching the last capture. Never waits for the device.
  // A step that cannot be captured throws Error (tensor/cuda_graph.h).
  void run(Context& ctx, const ReplayKey& key, const std::function<void()>& queue_step);
  const ReplayCounts& counts() const { return counts_; }

 private:
  ReplayPolicy policy_;
  std::optional<CudaGraph> graph_;
  ReplayCounts counts_;
};

// The key of a training step (optim/train_step.h) of `graph` with
// `optimizer` and `scaler` (null: none) on `ctx`.
ReplayKey train_step_key(const Context& ctx, const Graph& graph, const Sgd& optimizer, const LossScaler* scaler);

// ConfigError where `graph`'s steps cannot be replayed (Note [Replaying a
// step]): it times its layers (CompileOptions::layer_timing) or traces its
// kernels (a listener on its spans).
void check_replayable(Graph& graph);

}  // namespace glassbox
