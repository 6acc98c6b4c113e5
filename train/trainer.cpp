// train/trainer.cpp
#include "train/trainer.h"

#include <chrono>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <sstream>
#include <vector>

#include "graph/compile_flags.h"
#include "graph/finite_check.h"
#include "optim/replica_check.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tensor/step_readback.h"

namespace glassbox {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The context RNG's seed for epoch `epoch` (0-based): Note [One random stream
// per epoch]. SplitMix64's finaliser spreads nearby (seed, epoch) pairs apart.
uint64_t epoch_seed(uint64_t seed, int epoch) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(epoch) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void check_data_fits(const NetSpec& net, const Graph& graph, const DataSplits& data) {
  // One sample: the input's shape without its batch (any rank, a network of the user's own too).
  const std::vector<int64_t>& dims = graph.input("images").shape().dims();
  const Shape sample(std::vector<int64_t>(dims.begin() + (dims.empty() ? 0 : 1), dims.end()));
  for (const auto& [split, dataset] : {std::pair{"training", data.train.get()}, std::pair{"test", data.test.get()}}) {
    if (dataset == nullptr) continue;
    if (sample != dataset->sample_shape()) {
      throw ConfigError(cat(net.name, " takes images of ", sample.str(), "; the ", split, " set of '", data.spec,
                            "' gives ", dataset->sample_shape().str()));
    }
    if (dataset->classes() > net.classes) {
      throw ConfigError(cat(net.name, " has ", net.classes, " outputs; the ", split, " set of '", data.spec,
                            "' has ", dataset->classes(), " classes"));
    }
  }
}

// Exact text for a double ("%a"), so that summing over ranks loses nothing.
std::string hex_float(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return text;
}

// "samples correct loss_sum", as summed_over_ranks sends it.
Evaluation parse_scores(const std::string& text) {
  Evaluation scores;
  std::istringstream in(text);
  std::string loss;
  in >> scores.samples >> scores.correct >> loss;
  if (!in) throw CommunicationError(cat("a rank's training scores arrived garbled: '", text, "'"));
  scores.loss_sum = std::strtod(loss.c_str(), nullptr);
  return scores;
}

}  // namespace

Trainer::Trainer(Context& ctx, const NetSpec& net, Graph& graph, DataSplits data, TrainerOptions options)
    : ctx_(ctx),
      net_(net),
      graph_(graph),
      data_(std::move(data)),
      options_(std::move(options)),
      sgd_(ctx, graph.parameters(), graph.gradients(), options_.sgd, graph.working_parameters()) {
  if (data_.train == nullptr) throw ConfigError(cat("Trainer: '", data_.spec, "' has no training set"));
  check_data_fits(net_, graph_, data_);
  const int batch = graph_.batch();
  const int rank = data_parallel() ? options_.communicator->rank() : 0;
  const int ranks = data_parallel() ? options_.communicator->size() : 1;
  train_ = std::make_unique<LoaderBatches>(std::make_unique<Loader>(
      ctx_, data_.train,
      LoaderOptions{.batch = batch, .workers = options_.workers, .seed = options_.seed, .shuffle = true,
                    .mode = SampleMode::kTraining, .drop_last = true, .shard = rank, .shards = ranks,
                    .warn = options_.warn}));
  if (options_.evaluate && data_.test != nullptr) {
    test_ = std::make_unique<LoaderBatches>(std::make_unique<Loader>(
        ctx_, data_.test,
        LoaderOptions{.batch = batch, .workers = options_.workers, .seed = options_.seed, .shuffle = false,
                      .mode = SampleMode::kEvaluation, .drop_last = false, .warn = options_.warn}));
  }
  finish_setup();
}

Trainer::Trainer(Context& ctx, const NetSpec& net, Graph& graph, std::unique_ptr<BatchSource> train,
                 std::unique_ptr<BatchSource> validation, std::unique_ptr<BatchSource> test,
                 TrainerOptions options)
    : ctx_(ctx),
      net_(net),
      graph_(graph),
      options_(std::move(options)),
      sgd_(ctx, graph.parameters(), graph.gradients(), options_.sgd, graph.working_parameters()),
      train_(std::move(train)),
      validation_(options_.evaluate ? std::move(validation) : nullptr),
      test_(options_.evaluate ? std::move(test) : nullptr) {
  if (train_ == nullptr) throw ConfigError("Trainer: no training batches (a null pointer)");
  finish_setup();
}

void Trainer::finish_setup() {
  // The options a run cannot mean (the CLI names its flags for these first).
  if (options_.epochs < 1) {
    throw ConfigError(cat("Trainer: epochs is ", options_.epochs, "; a run trains at least one"));
  }
  if (options_.warmup_epochs < 0 || options_.warmup_epochs >= options_.epochs) {
    throw ConfigError(cat("Trainer: warmup_epochs is ", options_.warmup_epochs, " of ", options_.epochs,
                          " epochs; it must be from 0 to ", options_.epochs - 1, ", leaving epochs for the schedule"));
  }
  if (options_.steps_per_epoch < 0) {
    throw ConfigError(cat("Trainer: steps_per_epoch is ", options_.steps_per_epoch, "; 0 means the whole set"));
  }
  // A checkpoint saves them as UTF-8 text (safetensors metadata is JSON):
  // refused now rather than when the first epoch's checkpoint is written.
  if (!options_.checkpoint_dir.empty()) {
    for (const auto& [key, value] : options_.config) {
      if (first_non_utf8(key) != std::string::npos || first_non_utf8(value) != std::string::npos) {
        throw ConfigError(cat("Trainer: the setting '", excerpt(key, 40), "' = '", excerpt(value, 80),
                              "' is not UTF-8 text, which a checkpoint saves every setting as"));
      }
    }
    if (first_non_utf8(options_.vocabulary) != std::string::npos) {
      throw ConfigError(cat("Trainer: the vocabulary '", excerpt(options_.vocabulary, 80), "' is not UTF-8 text"));
    }
  }
  if (options_.cuda_graph) {  // checked before anything is set up for the job
    if (data_parallel()) {
      throw ConfigError("--cuda-graph replays the steps of one process; a data-parallel step waits on the host "
                        "between its all-reduce buckets and is not replayed (run without mpirun)");
    }
    replay_.emplace(ctx_);
    check_replayable(graph_);
  }
  if (data_parallel()) sync_ = std::make_unique<GradientSync>(ctx_, graph_, *options_.communicator, options_.sync);
  steps_per_epoch_ = train_->batches_per_epoch();
  if (options_.steps_per_epoch > 0) steps_per_epoch_ = std::min(steps_per_epoch_, options_.steps_per_epoch);
  if (options_.warmup_epochs > 0) options_.schedule.warmup_steps = options_.warmup_epochs * steps_per_epoch_;
  check_lr_schedule(options_.schedule);
  state_.config = options_.config;
  state_.vocabulary = options_.vocabulary;
  state_.run_id = new_run_id();
  if (graph_.compiled_precision() == Precision::kFp16) {
    scaler_.emplace(ctx_, options_.loss_scale);
    state_.loss_scale = scaler_->state();
  }
}

Trainer::~Trainer() = default;

std::map<std::string, std::string> run_environment(const Context& ctx, const Graph& graph) {
  // The run context's fields that decide the arithmetic's bits, on this
  // device, and the compile flags that do.
  const bool cpu = !ctx.device().is_cuda();
  const std::vector<std::string> keys =
      cpu ? std::vector<std::string>{"build", "cpu_threads", "cpu_simd", "cpu_blas", "cpu_conv"}
          : std::vector<std::string>{"build", "device_name", "cuda_runtime", "cudnn", "cublas"};
  std::map<std::string, std::string> environment;
  for (const auto& [key, value] : runtime_info(ctx).fields()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) environment[key] = value;
  }
  environment["compile_flags"] = compile_flags_deciding_bits(graph.compiled_options(), ctx.device());
  return environment;
}

namespace {

// Note [What a bit-for-bit resume needs] (train/trainer.h): "" where this run
// computes as the checkpoint's did, else what differs, in words.
std::string environment_differences(const std::map<std::string, std::string>& saved,
                                    const std::map<std::string, std::string>& now) {
  if (saved.empty()) return "the checkpoint does not record its threads, build and kernels";
  std::string differences;
  for (const auto& [key, value] : now) {
    const auto it = saved.find(key);
    const std::string was = it == saved.end() ? "not recorded" : cat("'", excerpt(it->second, 120), "'");
    if (it != saved.end() && it->second == value) continue;
    differences += cat(differences.empty() ? "" : "; ", key, " is '", value, "', the checkpoint's ", was);
  }
  return differences;
}

}  // namespace

const TrainingState& Trainer::resume(const std::string& dir) {
  TrainingState saved = load_checkpoint(dir, ctx_, graph_, net_, sgd_);
  const std::string file = checkpoint_train_path(dir, saved.epoch);
  // The run must continue as it started: every setting but the number of
  // epochs must be the checkpoint's, and the checkpoint must hold every one.
  // A setting that differs is named first: another precision has other
  // settings (fp16's loss scaling), which are missing for that reason.
  for (const auto& [key, value] : options_.config) {
    const auto it = saved.config.find(key);
    if (key != "epochs" && it != saved.config.end() && it->second != value) {
      throw ConfigError(cat("--resume ", dir, ": this run's ", key, " is '", excerpt(value, 120),
                            "', the checkpoint's is '", excerpt(it->second, 120), "'; resume with the same settings"));
    }
  }
  for (const auto& [key, value] : options_.config) {
    if (!saved.config.contains(key)) {
      throw DataError(cat(file, ": no \"config.", key, "\" in its __metadata__ (every setting of the run is saved "
                          "with it)"));
    }
  }
  // Note [A language model's vocabulary] (trainer.h): the same --data may
  // name a corpus that has changed since.
  if (!saved.vocabulary.empty() && saved.vocabulary != options_.vocabulary) {
    throw ConfigError(cat("--resume ", dir, ": the checkpoint's model was trained on a vocabulary of ",
                          saved.vocabulary, "; this run's data has ",
                          options_.vocabulary.empty() ? std::string("none") : options_.vocabulary,
                          ": its word ids name other words (has the corpus changed?)"));
  }
  // The number of epochs may grow, never shrink: fewer would end the run it
  // continues early and bend its schedule.
  if (const auto it = saved.config.find("epochs"); it != saved.config.end()) {
    int64_t planned = 0;
    try {
      planned = parse_int("__metadata__ \"config.epochs\"", it->second, 1, INT64_MAX);
    } catch (const ConfigError& e) {
      throw DataError(cat(file, ": ", e.what()));
    }
    if (options_.epochs < planned) {
      throw ConfigError(cat("--resume ", dir, ": this run's epochs is ", options_.epochs, ", fewer than the ", planned,
                            " the checkpoint's run asked for; --epochs may only grow on a resume"));
    }
  }
  // The schedule (and warm-up) read the step: a step that is not the
  // epochs' would shift it for the rest of the run.
  if (saved.step != saved.epoch * steps_per_epoch_) {
    throw DataError(cat(file, ": its __metadata__ says step ", saved.step, " after epoch ", saved.epoch,
                        "; this run takes ", steps_per_epoch_, " steps an epoch, so epoch ", saved.epoch,
                        " ends at step ", saved.epoch * steps_per_epoch_));
  }
  if (saved.epoch >= options_.epochs) {
    throw ConfigError(cat("--resume ", dir, ": the checkpoint has finished epoch ", saved.epoch, " of ",
                          options_.epochs, "; ask for more epochs to continue"));
  }
  const std::map<std::string, std::string> environment = run_environment(ctx_, graph_);
  if (const std::string differences = environment_differences(saved.environment, environment);
      !differences.empty()) {
    if (options_.strict_resume) {
      throw ConfigError(cat("--resume ", dir, " --strict-resume: ", differences,
                            "; resume as the checkpoint's run ran (the same --threads, build, compile flags and "
                            "device)"));
    }
    if (options_.warn) {
      options_.warn(cat("--resume ", dir, ": ", differences,
                        "; the run continues, but not bit for bit as if it had never stopped "
                        "(--strict-resume refuses this)"));
    }
  }
  if (scaler_) {
    if (!saved.loss_scale) {
      throw DataError(cat(file, ": no \"loss_scale\" in its __metadata__ (an fp16 run saves its loss scaling "
                          "with every checkpoint)"));
    }
    scaler_->restore(*saved.loss_scale);
  }
  saved.config = options_.config;
  saved.environment = environment;
  saved.vocabulary = options_.vocabulary;
  state_ = std::move(saved);
  resumed_from_ = dir;
  return state_;
}

// A run writes its checkpoints into a directory of its own: the one it
// resumed from, or one that holds no other run's (TrainerOptions::overwrite),
// and that no other run is writing into (its lock, which the writer holds
// from here on). Every rank refuses another run's checkpoints, so that none
// waits for a rank that stopped; only the writer locks, removes or writes.
void Trainer::claim_checkpoint_dir(bool writes) {
  std::error_code ignored;
  const bool resumed_here =
      !resumed_from_.empty() && std::filesystem::equivalent(options_.checkpoint_dir, resumed_from_, ignored);
  if (!writes) {
    if (!resumed_here) refuse_another_runs_checkpoints(options_.checkpoint_dir, options_.overwrite);
  } else if (resumed_here) {
    checkpoint_lock_ = CheckpointDirLock(options_.checkpoint_dir);
  } else {
    checkpoint_lock_ = start_checkpoint_dir(options_.checkpoint_dir, options_.overwrite);
  }
}

void Trainer::check_job() {
  if (data_parallel()) {  // after any resume: every rank must hold the same replica and take the same steps
    ReplicaDescription replica{.network = options_.network.empty() ? net_.name : options_.network,
                               .batch = graph_.batch(), .seed = options_.seed};
    for (const auto& [key, value] : options_.config) {  // the run's settings, by flag ("weight_decay": --weight-decay)
      if (key == "net" || key == "batch" || key == "seed") continue;  // compared above
      std::string flag = "--" + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      replica.settings.emplace_back(flag, value);
    }
    replica.settings.emplace_back("the steps per epoch", cat(steps_per_epoch_));
    replica.settings.emplace_back("--bucket-mb", cat(static_cast<double>(options_.sync.bucket_bytes) / (1 << 20)));
    replica.settings.emplace_back("--no-overlap", options_.sync.overlap ? "not given" : "given");
    replica.settings.emplace_back("--checkpoint-dir",
                                  options_.checkpoint_dir.empty() ? "not given" : options_.checkpoint_dir);
    replica.settings.emplace_back("--overwrite", options_.overwrite ? "given" : "not given");
    for (const auto& setting : options_.rank_zero_settings) replica.settings.push_back(setting);
    check_replicas(ctx_, graph_, *options_.communicator, replica);
  }
  if (!options_.checkpoint_dir.empty() && !checkpoint_dir_ready_) {
    claim_checkpoint_dir(writes_checkpoints());
    checkpoint_dir_ready_ = true;
  }
  job_checked_ = true;
}

void Trainer::run(const TrainerHooks& hooks) {
  if (!job_checked_) check_job();
  const bool writes = writes_checkpoints();
  if (state_.environment.empty()) state_.environment = run_environment(ctx_, graph_);
  for (int epoch = state_.epoch + 1; epoch <= options_.epochs; ++epoch) {
    EpochReport report = train_epoch(epoch, hooks);
    if (validation_) report.validation = evaluate(ctx_, graph_, *validation_);
    if (test_) report.test = evaluate(ctx_, graph_, *test_);
    state_.epoch = epoch;
    if (!options_.checkpoint_dir.empty() && writes) {
      save_checkpoint(options_.checkpoint_dir, ctx_, graph_, net_, sgd_, state_);
      report.checkpoint = checkpoint_model_path(options_.checkpoint_dir, epoch);
    }
    if (hooks.on_epoch) hooks.on_epoch(report);
  }
}

EpochReport Trainer::train_epoch(int epoch, const TrainerHooks& hooks) {
  ctx_.rng().seed(epoch_seed(options_.seed, epoch - 1));
  if (train_->continues()) graph_.reset_carried_state(ctx_);
  train_->start_epoch(epoch - 1);
  const Tensor& labels = graph_.input("labels");
  const Tensor& logits = logits_of(graph_);
  const int classes = static_cast<int>(logits.shape().dims().back());
  const int64_t total_steps = steps_per_epoch_ * options_.epochs;

  EpochReport report{.epoch = epoch, .epochs = options_.epochs, .steps = steps_per_epoch_};
  Evaluation seen;  // the training batches, scored as they were trained on
  double compute = 0.0;
  // Overflow steps are counted from the scaler's state here and at the end:
  // reading a CUDA scaler's state waits for the device, so never per step.
  const int64_t skipped_before = scaler_ ? scaler_->state().skipped_steps : 0;
  // Note [Reading a step's results a step late] (tensor/step_readback.h):
  // on a GPU each step's loss (and, but for continued windows, its logits and
  // labels) is read after the next step is queued. The logits stay as
  // forward left them: backward writes only gradients.
  std::vector<Tensor> read_back = {graph_.nodes()[static_cast<size_t>(graph_.loss_node())].value};
  if (!train_->continues()) read_back.insert(read_back.end(), {logits, labels});
  StepReadback readback(ctx_, std::move(read_back), ctx_.is_cuda() ? 1 : 0);
  struct Queued {
    int64_t step_in_epoch;
    int64_t count;
    float lr;
  };
  std::deque<Queued> queued;
  const auto start = Clock::now();
  auto read_oldest = [&] {
    const Readout r = readback.take();
    const Queued q = queued.front();
    queued.pop_front();
    float loss = 0.0f;
    try {
      loss = check_loss_value(ctx_, graph_, r.step, r.floats(0)[0], state_.step - r.step);
    } catch (const NumericalError& e) {
      throw NumericalError(cat("epoch ", epoch, ", ", e.what()));
    }
    if (train_->continues()) {  // whole windows: the loss is exact, and the logits too many to copy (evaluate.h)
      seen.loss_sum += static_cast<double>(loss) * static_cast<double>(q.count);
      seen.samples += q.count;
      seen.has_accuracy = false;
    } else {
      score_rows(r.floats(1), r.ints(2), static_cast<int>(q.count), classes, seen);
    }
    if (hooks.on_step) {
      const double elapsed = seconds_since(start);
      hooks.on_step({.epoch = epoch, .epochs = options_.epochs, .step = q.step_in_epoch, .steps = steps_per_epoch_,
                     .global_step = r.step, .loss = loss, .lr = q.lr,
                     .images_per_second = static_cast<double>(seen.samples) / elapsed,
                     .elapsed_seconds = elapsed});
    }
  };
  for (int64_t step = 1; step <= steps_per_epoch_; ++step) {
    const int64_t count = train_->next(graph_);
    if (count == 0) break;  // the loader passed over a batch with no readable sample: the epoch ends early
    report.lr = options_.schedule.at(options_.sgd.lr, state_.step, total_steps, steps_per_epoch_);
    sgd_.set_lr(report.lr);
    const auto step_start = Clock::now();
    if (replay_) {
      train_step(ctx_, graph_, sgd_, *replay_, scaler_ ? &*scaler_ : nullptr);
    } else {
      train_step(ctx_, graph_, sgd_, sync_.get(), scaler_ ? &*scaler_ : nullptr);
    }
    ++state_.step;
    // With check_numerics, every value of the step first: it names where the
    // trouble starts, before the loss says only that there is some. Under a
    // loss scaler (fp16), scaled activation gradients may overflow by design
    // (StepGradients): a skipped step has only its outputs checked, an
    // applied one its outputs and parameter gradients.
    if (options_.check_numerics) {
      // The reads below wait on the device, which waits on the step's
      // all-reduce: settle first, so that a rank that died is found within
      // the communicator's deadline, not waited for (optim/train_step.h).
      if (sync_) sync_->settle(ctx_);
      const StepGradients gradients = !scaler_                         ? StepGradients::kAll
                                      : scaler_->last_step_skipped() ? StepGradients::kNone
                                                                     : StepGradients::kParameters;
      const std::string where = describe_non_finite_step(ctx_, graph_, gradients);
      if (!where.empty()) {
        throw NumericalError(cat("epoch ", epoch, ", step ", state_.step, ": ", where, fp16_range_note(ctx_)));
      }
    }
    readback.record(state_.step);
    queued.push_back({step, count, report.lr});
    while (readback.due()) read_oldest();
    compute += seconds_since(step_start);
  }
  // Note [Skipped samples] (data/loader.h): a batch with no readable sample
  // is passed over, so the epoch took fewer steps than it has batches. The
  // step count, which the schedule and a resume read, still ends the epoch
  // where its batches end: the next epoch's rates and a resumed run's are
  // those of a run without the unreadable files.
  state_.step = std::max(state_.step, static_cast<int64_t>(epoch) * steps_per_epoch_);
  const auto drain_start = Clock::now();
  if (sync_) sync_->settle(ctx_);  // the last step's reductions, with the communicator's deadline
  while (readback.unread() > 0) read_oldest();
  compute += seconds_since(drain_start);
  const LoaderStats stats = train_->stats();
  if (data_parallel()) seen = summed_over_ranks(seen);
  report.seconds = seconds_since(start);
  report.global_step = state_.step;
  report.train_loss = seen.loss();
  report.train_accuracy = seen.accuracy();
  report.data_wait_seconds = stats.wait_seconds + stats.copy_seconds;
  report.compute_seconds = compute;
  report.images_per_second = static_cast<double>(seen.samples) / report.seconds;
  report.skipped = stats.skipped;
  if (scaler_) {
    const LossScaleState scaling = scaler_->state();
    state_.loss_scale = scaling;
    report.loss_scale = scaling.scale;
    report.overflow_steps = scaling.skipped_steps - skipped_before;
  }
  return report;
}

// The ranks' training scores added up, through the communicator's host-side
// gather: three numbers per rank, once an epoch.
Evaluation Trainer::summed_over_ranks(const Evaluation& mine) const {
  const std::vector<std::string> all =
      options_.communicator->all_gather(cat(mine.samples, " ", mine.correct, " ", hex_float(mine.loss_sum)));
  Evaluation sum = mine;
  sum.samples = sum.correct = 0;
  sum.loss_sum = 0.0;
  for (const std::string& text : all) {
    const Evaluation rank = parse_scores(text);
    sum.samples += rank.samples;
    sum.correct += rank.correct;
    sum.loss_sum += rank.loss_sum;
  }
  return sum;
}

}  // namespace glassbox
