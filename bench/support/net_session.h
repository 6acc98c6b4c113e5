// bench/support/net_session.h: a compiled network with its optimizer and
// inputs, ready to step.
//
// Google Benchmark 1.7.1 calls a benchmark's function again for every trial
// and repetition. Building VGG16, initialising 138M parameters and choosing
// cuDNN algorithms each time would dominate the run, so sessions are cached
// and outlive the calls; only one is kept at a time, so running every network
// never holds more than one in memory.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "data/loader.h"
#include "graph/graph.h"
#include "nets/registry.h"
#include "optim/gradient_sync.h"
#include "optim/loss_scaler.h"
#include "optim/sgd.h"
#include "optim/step_replay.h"

namespace glassbox::bench {

// What one timed step does (DESIGN.md section 5).
enum class StepMode {
  kForward,          // training-mode forward, loss included
  kForwardBackward,  // + backward, no update (convnet-benchmarks, `caffe time`)
  kTrainStep,        // zero gradients + forward + backward + SGD update (tf_cnn_benchmarks)
  kInference,        // inference-phase forward on a graph compiled for inference only
};
std::string_view name_of(StepMode mode);
// Analytic FLOPs of a step as a multiple of 2 x forward MACs: 1 forward, 3 with backward.
int flop_multiplier(StepMode mode);
// The plan a mode runs on: inference has its own, without gradients.
Phase plan_for(StepMode mode);

struct SessionKey {
  std::string net;
  int batch = 0;
  Device device;
  Precision precision = Precision::kFp32;
  Phase phase = Phase::kTraining;  // the plan compiled (plan_for(mode))
  std::string data;                // "": the synthetic batch; else a --data spec read by next_real_batch
  friend bool operator==(const SessionKey&, const SessionKey&) = default;
};

class NetSession {
 public:
  // Builds and compiles the network, fills the inputs with seeded U(-1, 1)
  // images (never zeros) and fixed labels (n % classes). With `cuda_graph`,
  // every mode's steps are replayed as CUDA graphs after the first (Note
  // [Replaying a step], optim/step_replay.h): ConfigError on the CPU.
  NetSession(const NetSpec& net, const SessionKey& key, const CompileOptions& options, bool cuda_graph = false);

  // Sets the session up for `mode`: the optimizer's state exists only while
  // a mode that updates parameters runs (train_step), so that every mode's
  // memory is what that mode needs. Call before warm-up and timing.
  void begin(StepMode mode);
  // Data-parallel train steps (bench_nets under mpirun): from now on,
  // train_step averages the gradients over `communicator`'s ranks; null
  // goes back to steps of this rank alone.
  // ConfigError with a communicator in a session that replays its steps.
  void set_data_parallel(Communicator* communicator, const GradientSyncOptions& options);
  GradientSync* sync() { return sync_.get(); }
  void step(StepMode mode);
  // The replay's counts (cuda_graph sessions), else null.
  const ReplayCounts* replay_counts() const { return replay_ ? &replay_->counts() : nullptr; }
  // The loss of the step just run, checked: throws NumericalError
  // (graph/finite_check.h) naming the step of this mode, counted from the
  // first warm-up step, if it is not finite. Reading it waits for the device:
  // call it after the step's end mark, outside the timed interval.
  float checked_loss(StepMode mode);
  // Real data (key().data, bench_nets --data): fills the inputs with the
  // next batch of the training set, through a Loader made on first use
  // (epochs follow one another; every batch is full). Returns the seconds
  // this took on the host: waiting for the workers and queuing the copy.
  double next_real_batch(int workers);
  Context& ctx() { return ctx_; }
  Graph& graph() { return graph_; }
  const SessionKey& key() const { return key_; }

  // Warm-up runs once per mode and session, not once per Google Benchmark trial.
  bool warmed_up(StepMode mode) const { return warmed_up_.contains(mode); }
  void mark_warmed_up(StepMode mode) { warmed_up_.insert(mode); }

 private:
  void step_eagerly(StepMode mode);
  Sgd& optimizer();  // train_step's; Error before begin(train_step)

  SessionKey key_;
  Context ctx_;
  Graph graph_;
  std::optional<Sgd> sgd_;
  // fp16's loss scaling: train_step's, and forward_backward's backward runs
  // at its initial scale, as the PyTorch peer's GradScaler does.
  std::optional<LossScaler> scaler_;
  std::unique_ptr<GradientSync> sync_;
  std::optional<StepReplay> replay_;  // cuda_graph sessions
  std::set<StepMode> warmed_up_;
  std::map<StepMode, int64_t> steps_;  // steps checked so far, per mode
  // Declared after ctx_ and graph_, so destroyed first: its workers copy into them.
  std::unique_ptr<Loader> loader_;
  int epoch_ = 0;
};

// kBenchmarkSgd (optim/sgd.h): the SGD settings of every benchmark train step.


// The cached session for `key`; a different key releases the previous session first.
// `cuda_graph` is the run's, the same for every session.
NetSession& cached_session(const NetSpec& net, const SessionKey& key, const CompileOptions& options,
                           bool cuda_graph = false);
// Frees the cached session. Call before main returns, so device memory, cuDNN
// and cuBLAS handles go while the CUDA runtime is still up (not during static
// destruction, whose order relative to the runtime's teardown is unspecified).
void release_cached_session();

}  // namespace glassbox::bench
