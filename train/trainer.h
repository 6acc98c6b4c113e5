// train/trainer.h: the training loop: epochs of SGD steps on real data, an
// evaluation after each, checkpoints, and a report of where the time went.
//
//   Trainer trainer(ctx, net, graph, open_data("fashion-mnist", net.sample, net.classes), options);
//   if (resuming) trainer.resume(dir);
//   trainer.run({.on_step = ..., .on_epoch = ...});
//
// One epoch: the training loader's batches, each a train_step
// (optim/train_step.h) with the learning rate of that step (optim/lr_schedule.h),
// the loss checked (a non-finite loss stops the run with NumericalError
// naming the step and the first non-finite output); then the test set in the
// inference phase (train/evaluate.h); then a checkpoint (train/checkpoint.h).
//
// Note [One random stream per epoch]: at the start of epoch e the context's
// RNG (CPU dropout masks) is reseeded from (seed, e), and the loaders draw
// epoch e's order and augmentation from (seed, e) too. An epoch's randomness
// therefore does not depend on what ran before it, so on the CPU a run
// resumed from epoch k's checkpoint ends with the same parameters, bit for
// bit, as one that never stopped. (On a GPU, cuDNN's dropout keeps its own
// generator state, which checkpoints do not hold: GPU runs with dropout do
// not resume bit for bit.)
//
// Data-parallel (TrainerOptions::communicator of size N > 1): every rank runs
// this same loop on its shard of each epoch (LoaderOptions::shard), with its
// gradients averaged over the ranks before each update (optim/gradient_sync.h),
// so N ranks at batch B take the steps one process takes at batch N x B
// (batch norm's statistics excepted: they stay per rank, as in PyTorch's DDP;
// and on a GPU dropout's masks, which each rank draws for itself: Note
// [Dropout mask bits] says how the CPU draws one process's).
// The ranks are checked to hold the same replica before the first step
// (optim/replica_check.h). Training loss and accuracy are summed over the
// ranks; every rank evaluates the whole test set; only rank 0 writes checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/batch_source.h"
#include "data/data_spec.h"
#include "data/loader.h"
#include "graph/graph.h"
#include "nets/registry.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "optim/gradient_sync.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "optim/sgd.h"
#include "optim/step_replay.h"

namespace glassbox {

struct TrainerOptions {
  int epochs = 10;
  SgdOptions sgd{.lr = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f};  // sgd.lr is the base rate
  LrSchedule schedule;
  int warmup_epochs = 0;        // sets schedule.warmup_steps to this many epochs of steps
  uint64_t seed = 1;            // data order, augmentation, dropout masks
  int workers = 0;              // loader threads; 0: one per core
  int64_t steps_per_epoch = 0;  // 0: the whole training set (batches that fill); fewer for a quick run
  bool evaluate = true;         // the test set after every epoch
  // After every step, every output and gradient is checked, and the first
  // that is not finite stops the run, named (graph/finite_check.h). The graph
  // must be compiled with MemoryReuse::kOff. Slow: for finding where a run breaks.
  bool check_numerics = false;
  std::string checkpoint_dir;   // "": none; else a checkpoint after every epoch
  // A new run (not resumed from checkpoint_dir) refuses a checkpoint_dir that
  // holds another run's checkpoints, which it would mix with its own, unless
  // `overwrite`: then those are removed before the first epoch. Every run
  // refuses a checkpoint_dir that another run is writing into: the writer
  // holds its lock (CheckpointDirLock) from before the first epoch for as
  // long as the Trainer lives.
  bool overwrite = false;
  // Resuming where something that decides the bits differs from the
  // checkpoint's run (Note [What a bit-for-bit resume needs]): a warning, or
  // with strict_resume a ConfigError.
  bool strict_resume = false;
  // Run settings in words, saved with each checkpoint (TrainingState::config).
  std::map<std::string, std::string> config;
  // A language model's vocabulary (TextCorpus::vocabulary_digest), saved with
  // each checkpoint; "" for an image classifier. Note [A language model's
  // vocabulary]: a word id means a word only in the vocabulary it was
  // trained on. Another corpus with as many words gives ids of the same range
  // to other words, so a model resumed or scored on it runs without an
  // error and means nothing (a model of one corpus scored 8,037 on another
  // that shares none of its words). A resume whose checkpoint names another
  // vocabulary is refused; one that names none (saved before it was kept)
  // is trusted.
  std::string vocabulary;
  // Called once per file a loader skips ("skipping ...: not a JPEG file").
  std::function<void(const std::string&)> warn;
  // An fp16 graph's dynamic loss scaling (optim/loss_scale.h; GradScaler's
  // defaults); other precisions do not use it.
  LossScaleOptions loss_scale;
  // Data-parallel training: this process's place in the job (it outlives the
  // Trainer); null or of size 1 for one process. `network` names the replica
  // for the start-up check.
  Communicator* communicator = nullptr;
  GradientSyncOptions sync;
  std::string network;
  // Settings beyond `config` that the ranks compare at the start, as flag
  // and value ({"--log", "run.jsonl"}): those only rank 0 acts on (as it does
  // on checkpoint_dir and overwrite, which are compared too), which another
  // rank would hold in silence.
  std::vector<std::pair<std::string, std::string>> rank_zero_settings;
  // Each step after the first is one CUDA graph launch (Note [Replaying a
  // step], optim/step_replay.h): the same bits as eager steps. One process
  // on a GPU: ConfigError on the CPU, with a communicator of several ranks,
  // or for a graph that times its layers.
  bool cuda_graph = false;
};

struct StepReport {
  int epoch = 0;                 // 1-based
  int epochs = 0;
  int64_t step = 0;              // 1-based within the epoch
  int64_t steps = 0;             // in this epoch
  int64_t global_step = 0;       // optimizer steps so far in the run
  float loss = 0.0f;             // of this step
  float lr = 0.0f;               // used by this step
  double images_per_second = 0;  // this epoch so far
  double elapsed_seconds = 0;    // this epoch so far
};

struct EpochReport {
  int epoch = 0;  // 1-based
  int epochs = 0;
  int64_t steps = 0;
  int64_t global_step = 0;
  float lr = 0.0f;               // of the epoch's last step
  double train_loss = 0.0;       // mean over the epoch's samples (training phase: dropout on)
  double train_accuracy = 0.0;
  std::optional<Evaluation> validation;  // where a validation split is given
  std::optional<Evaluation> test;  // unless evaluation is off
  double seconds = 0.0;          // the training part's wall time
  double data_wait_seconds = 0.0;  // of which waiting for and copying data
  double compute_seconds = 0.0;  // of which in train steps (to the loss read, which waits for the device)
  double images_per_second = 0.0;  // of all ranks together
  int64_t skipped = 0;           // unreadable samples left out of this epoch's counts (this rank's)
  // fp16: steps whose gradients overflowed, so their update was skipped
  // (optim/loss_scaler.h), and the loss scale after the epoch (empty: not
  // fp16; 0 once every step has overflowed long enough to halve it to 0).
  int64_t overflow_steps = 0;
  std::optional<float> loss_scale;
  std::string checkpoint;        // the files written, "" if none
};

struct TrainerHooks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;
};

class Trainer {
 public:
  // `graph` is built from `net` at the training batch and compiled for
  // training on `ctx`. Throws ConfigError if the data does not fit the
  // network (sample shape, classes).
  Trainer(Context& ctx, const NetSpec& net, Graph& graph, DataSplits data, TrainerOptions options);
  // The same loop over batches made elsewhere (data/batch_source.h: a
  // language model's text windows), already checked against the network.
  // `validation` and `test` may be null; each one given is evaluated after
  // every epoch (unless options.evaluate is off). Where the batches continue
  // from each other, the graph's carried state is reset at the start of
  // every epoch. TrainerOptions' workers and warn belong to loaders and are
  // not used here.
  Trainer(Context& ctx, const NetSpec& net, Graph& graph, std::unique_ptr<BatchSource> train,
          std::unique_ptr<BatchSource> validation, std::unique_ptr<BatchSource> test, TrainerOptions options);
  ~Trainer();

  // Loads the latest checkpoint of `dir` (parameters, running statistics,
  // momentum, progress, the run id); run() then continues after its epoch.
  // Refuses (ConfigError) other settings than the checkpoint's; refuses
  // (DataError naming the train file) a checkpoint without one of this run's
  // settings (options.config's keys), or whose step is not its epochs of
  // this run's steps_per_epoch() (the schedule counts steps); warns (or,
  // with strict_resume, refuses) where what decides the bits differs.
  const TrainingState& resume(const std::string& dir);
  const TrainingState& state() const { return state_; }

  // Data-parallel: that every rank holds the same replica and will take the
  // same steps, with the same settings (optim/replica_check.h); then, with a
  // checkpoint directory, claims it (the one it resumed from, or one that
  // holds no other run's, locked by the writer). Blocking: every rank calls
  // it, after any resume. run() calls it first where it was not called: call
  // it before writing anything of the run (a log), so that a refused job
  // writes nothing.
  void check_job();
  // Epochs state().epoch + 1 .. options.epochs.
  void run(const TrainerHooks& hooks = {});

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  const Sgd& optimizer() const { return sgd_; }
  // With TrainerOptions::cuda_graph, what the replay did so far; else null.
  const ReplayCounts* replay_counts() const { return replay_ ? &replay_->counts() : nullptr; }

 private:
  void finish_setup();  // what both constructors do once the batches exist
  void claim_checkpoint_dir(bool writes);
  EpochReport train_epoch(int epoch, const TrainerHooks& hooks);
  bool data_parallel() const { return options_.communicator != nullptr && options_.communicator->size() > 1; }
  // Rank 0 writes the checkpoints of a data-parallel run: the replicas are the same.
  bool writes_checkpoints() const { return !data_parallel() || options_.communicator->rank() == 0; }
  Evaluation summed_over_ranks(const Evaluation& mine) const;

  Context& ctx_;
  const NetSpec net_;
  Graph& graph_;
  DataSplits data_;
  TrainerOptions options_;
  Sgd sgd_;
  std::unique_ptr<BatchSource> train_;
  std::unique_ptr<BatchSource> validation_;  // null: none
  std::unique_ptr<BatchSource> test_;        // null: no evaluation
  std::unique_ptr<GradientSync> sync_;  // data-parallel only
  std::optional<LossScaler> scaler_;     // fp16 only
  std::optional<StepReplay> replay_;     // TrainerOptions::cuda_graph only
  int64_t steps_per_epoch_ = 0;
  TrainingState state_;  // a new run's id from the start; a resumed run's from its checkpoint
  std::string resumed_from_;  // the directory resume() loaded, if any
  bool checkpoint_dir_ready_ = false;
  bool job_checked_ = false;
  CheckpointDirLock checkpoint_lock_;  // the writer's, from the first run() on
};

// Note [What a bit-for-bit resume needs]: a resumed run ends with the same
// bits as one that never stopped (Note [One random stream per epoch]) only
// where the arithmetic is the same: the same CPU thread count (each thread
// sums its share, so the threads decide the order of the sums), the same
// build (its CPU baseline decides the vector width of Glassbox's kernels),
// the same kernels (oneDNN's ISA, the BLAS, and the compile flags that choose
// among kernels: compile_flags_deciding_bits) and, on a GPU, the same GPU and
// libraries. Each checkpoint records them (run_environment); a resume
// compares them with its own.
std::map<std::string, std::string> run_environment(const Context& ctx, const Graph& graph);

}  // namespace glassbox
