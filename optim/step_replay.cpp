// optim/step_replay.cpp: Note [Replaying a step] (optim/step_replay.h).
#include "optim/step_replay.h"

#include "graph/step_spans.h"
#include "tensor/error.h"

namespace glassbox {

ReplayPolicy::ReplayPolicy(int warmup) : warmup_(warmup) {
  if (warmup < 1) {
    throw ConfigError(cat("a replayed step needs at least 1 eager warm-up step before its capture, got ", warmup));
  }
}

ReplayAction ReplayPolicy::next(const ReplayKey& key) {
  if (!key_ || !(*key_ == key)) {
    key_ = key;
    eager_calls_ = 0;
    captured_ = false;
  }
  if (eager_calls_ < warmup_) {
    ++eager_calls_;
    return ReplayAction::kEager;
  }
  return captured_ ? ReplayAction::kReplay : ReplayAction::kCapture;
}

StepReplay::StepReplay(const Context& ctx, int warmup) : policy_(warmup) {
  if (!ctx.device().is_cuda()) {
    throw ConfigError(cat("--cuda-graph needs a CUDA device: a step is replayed as a CUDA graph; this context is ",
                          ctx.device().str()));
  }
}

void StepReplay::run(Context& ctx, const ReplayKey& key, const std::function<void()>& queue_step) {
  ReplayKey held = key;
  held.workspace = ctx.workspace();
  switch (policy_.next(held)) {
    case ReplayAction::kEager:
      graph_.reset();  // captured for another key: its buffers may be gone
      queue_step();
      ++counts_.eager;
      return;
    case ReplayAction::kCapture:
      graph_.reset();
      graph_ = CudaGraph::capture(ctx, queue_step);  // runs nothing
      policy_.captured();
      ++counts_.captures;
      counts_.nodes = graph_->nodes();
      break;
    case ReplayAction::kReplay:
      ++counts_.replays;
      break;
  }
  graph_->launch(ctx);
}

ReplayKey train_step_key(const Context& ctx, const Graph& graph, const Sgd& optimizer, const LossScaler* scaler) {
  SgdOptions held = optimizer.options();
  held.lr = 0.0f;  // read from device memory by the update kernel (Sgd::set_lr): not in the capture
  return ReplayKey{.graph = graph.replay_generation(), .step = 0, .optimizer = optimizer.serial(),
                   .options = held, .scaler = scaler ? scaler->serial() : 0, .workspace = ctx.workspace()};
}

void check_replayable(Graph& graph) {
  if (graph.step_spans().records()) {
    throw ConfigError("a step of a graph that times its layers or traces its kernels cannot be replayed as a CUDA "
                      "graph: the host marks each layer of each step");
  }
  if (graph.compiled_options().sync_each_layer) {
    throw ConfigError("a step of a graph compiled with sync_each_layer cannot be replayed as a CUDA graph: the host "
                      "waits for the device after each layer, which a capture cannot hold");
  }
}

}  // namespace glassbox
