// bench/support/net_session.cpp
#include "bench/support/net_session.h"

#include <chrono>
#include <memory>

#include "data/data_spec.h"
#include "data/synthetic.h"
#include "graph/finite_check.h"
#include "optim/train_step.h"

namespace glassbox::bench {

std::string_view name_of(StepMode mode) {
  switch (mode) {
    case StepMode::kForward: return "forward";
    case StepMode::kForwardBackward: return "forward_backward";
    case StepMode::kTrainStep: return "train_step";
    case StepMode::kInference: return "inference";
  }
  return "?";
}

int flop_multiplier(StepMode mode) { return mode == StepMode::kForward || mode == StepMode::kInference ? 1 : 3; }

Phase plan_for(StepMode mode) { return mode == StepMode::kInference ? Phase::kInference : Phase::kTraining; }

NetSession::NetSession(const NetSpec& net, const SessionKey& key, const CompileOptions& options, bool cuda_graph)
    : key_(key), ctx_(Context::on(key.device)), graph_(build_net(net, key.batch)) {
  CompileOptions plan = options;
  plan.phase = key.phase;
  graph_.compile(ctx_, plan);
  if (cuda_graph) {
    replay_.emplace(ctx_);
    check_replayable(graph_);
  }
  if (plan.precision == Precision::kFp16 && plan.phase == Phase::kTraining) scaler_.emplace(ctx_, LossScaleOptions{});
  fill_synthetic_batch(ctx_, graph_, net.classes);
}

void NetSession::begin(StepMode mode) {
  if (plan_for(mode) != key_.phase) {
    throw Error(cat(name_of(mode), " on a session compiled for ",
                    key_.phase == Phase::kInference ? "inference" : "training"));
  }
  if (mode != StepMode::kTrainStep) {
    sgd_.reset();
  } else if (!sgd_) {
    sgd_.emplace(ctx_, graph_.parameters(), graph_.gradients(), kBenchmarkSgd, graph_.working_parameters());
  }
}

void NetSession::set_data_parallel(Communicator* communicator, const GradientSyncOptions& options) {
  if (communicator && replay_) throw ConfigError("a data-parallel step is not replayed as a CUDA graph");
  sync_ = communicator ? std::make_unique<GradientSync>(ctx_, graph_, *communicator, options) : nullptr;
}

void NetSession::step(StepMode mode) {
  if (!replay_) {
    step_eagerly(mode);
    return;
  }
  if (mode == StepMode::kTrainStep) {
    train_step(ctx_, graph_, optimizer(), *replay_, scaler_ ? &*scaler_ : nullptr);
    return;
  }
  // The other modes: the key of the graph and the scaler, and which mode (a
  // train step is 0). The scaler gives the graph its device scale first, as
  // train_step does: the first step's doing so would change the key, and the
  // capture would come a step late.
  if (scaler_ && mode == StepMode::kForwardBackward) scaler_->before_backward(graph_);
  const ReplayKey key{.graph = graph_.replay_generation(), .step = 1 + static_cast<int>(mode),
                      .scaler = scaler_ ? scaler_->serial() : 0};
  replay_->run(ctx_, key, [&] { step_eagerly(mode); });
}

Sgd& NetSession::optimizer() {
  if (!sgd_) throw Error("train_step before begin(train_step): no optimizer");
  return *sgd_;
}

void NetSession::step_eagerly(StepMode mode) {
  if (mode == StepMode::kInference) {
    graph_.forward(ctx_, Phase::kInference);
    return;
  }
  if (mode == StepMode::kTrainStep) {
    train_step(ctx_, graph_, optimizer(), sync_.get(), scaler_ ? &*scaler_ : nullptr);
    return;
  }
  // forward_backward's backward is a training step's: the parameter gradients
  // become this step's (graph/graph.h), as PyTorch's peer starts each from
  // zero_grad(set_to_none=True).
  graph_.forward(ctx_, Phase::kTraining);
  if (mode == StepMode::kForward) return;
  if (scaler_) scaler_->before_backward(graph_);
  graph_.backward(ctx_, Graph::ParamGrads::kReplace);
}

double NetSession::next_real_batch(int workers) {
  if (key_.data.empty()) throw Error(cat("next_real_batch: the session of ", key_.net, " has no --data"));
  const auto start = std::chrono::steady_clock::now();
  if (!loader_) {
    const NetSpec net = find_net(key_.net);
    loader_ = std::make_unique<Loader>(ctx_, open_data(key_.data, net.sample, net.classes).train,
                                       LoaderOptions{.batch = key_.batch, .workers = workers, .seed = 1,
                                                     .shuffle = true, .mode = SampleMode::kTraining,
                                                     .drop_last = true});
    loader_->start_epoch(epoch_);
  }
  if (loader_->next(graph_.input("images"), graph_.input("labels")) == 0) {
    loader_->start_epoch(++epoch_);
    loader_->next(graph_.input("images"), graph_.input("labels"));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A data-parallel step's reductions are watched first, with their deadline
// (Note [Watching the previous step's reductions]): reading the loss waits
// for the device, which would wait for a dead rank forever.
float NetSession::checked_loss(StepMode mode) {
  if (sync_) sync_->settle(ctx_);
  return glassbox::checked_loss(ctx_, graph_, ++steps_[mode]);
}

namespace {
std::unique_ptr<NetSession> cached;
}  // namespace

void release_cached_session() { cached.reset(); }

NetSession& cached_session(const NetSpec& net, const SessionKey& key, const CompileOptions& options,
                           bool cuda_graph) {
  if (!cached || !(cached->key() == key)) {
    cached.reset();  // free the old network before building the next
    cached = std::make_unique<NetSession>(net, key, options, cuda_graph);
  }
  return *cached;
}

}  // namespace glassbox::bench
