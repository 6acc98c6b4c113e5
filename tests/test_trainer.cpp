// tests/test_trainer.cpp: the training loop: it learns real data, resumes
// bit for bit (keeping its run id), refuses a checkpoint that does not hold
// the run's settings and steps, locks its checkpoint directory, stops at the
// first non-finite loss keeping the last good checkpoint, and refuses data
// that does not fit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "nets/nets.h"
#include "optim/communicator.h"
#include "train/trainer.h"
#include "tensor/copy.h"
#include "tensor/safetensors.h"
#include "tests/support/data_files.h"
#include "tests/support/sanitizers.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

// A small network with everything whose state a resume must restore: batch
// norm (running statistics), dropout (the RNG) and momentum.
Graph tiny_net(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 1, 28, 28});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 4, .kernel = 5, .stride = 3}, "conv1"), {}, "bn1"));  // 8x8
  x = g.dropout(g.flatten(x), {.p = 0.25f}, "drop");
  x = g.linear(x, {.out_features = 10}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(x, labels));
}

const NetSpec kTinyNet{"TinyNet", "conv, batch norm, dropout, linear (tests)", Shape{1, 28, 28}, 10, 16, 16, tiny_net};

struct TrainingRun {
  Context ctx = Context::cpu();
  Graph graph;
  std::unique_ptr<Trainer> trainer;

  TrainingRun(const NetSpec& net, const std::string& data, TrainerOptions options, int batch = 16)
      : graph(net.build(batch)) {
    graph.compile(ctx);
    trainer = std::make_unique<Trainer>(ctx, net, graph, open_data(data, net.sample, net.classes), std::move(options));
  }
  std::vector<float> parameters() { return to_vector<float>(ctx, graph.parameters()); }
  std::vector<float> state() {
    std::vector<float> all;
    for (const NamedTensor& t : graph.named_state()) {
      const std::vector<float> v = to_vector<float>(ctx, t.tensor);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
};

TrainerOptions quick(int epochs, const std::string& dir = "") {
  return {.epochs = epochs, .sgd = {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f},
          .schedule = parse_lr_schedule("cosine", "--schedule"), .seed = 7, .workers = 2,
          .steps_per_epoch = 6, .checkpoint_dir = dir,
          .config = {{"net", "TinyNet"}, {"lr", "0.05"}}};
}

// Note [One random stream per epoch]: three epochs straight, and one epoch
// then a resumed run of the other two, end with the same bits.
TEST(Trainer, AResumedRunEndsBitForBitAsOneThatNeverStopped) {
  testing::TempDir dir;
  TrainingRun straight(kTinyNet, "synthetic:128", quick(3));
  straight.trainer->run();

  // The same run, stopped after its first epoch's checkpoint (as a kill would).
  struct Stop {};
  TrainingRun first(kTinyNet, "synthetic:128", quick(3, dir.path()));
  EXPECT_THROW(first.trainer->run({.on_epoch = [](const EpochReport&) { throw Stop{}; }}), Stop);
  ASSERT_TRUE(has_checkpoint(dir.path()));
  // Note [What a bit-for-bit resume needs]: the checkpoint records what decides the bits.
  const std::map<std::string, std::string> environment = read_training_state(dir.path()).environment;
  EXPECT_EQ(environment, run_environment(first.ctx, first.graph));
  for (const char* key : {"build", "cpu_threads", "cpu_simd", "cpu_blas", "cpu_conv", "compile_flags"}) {
    EXPECT_TRUE(environment.contains(key)) << key;
  }
  EXPECT_EQ(environment.at("compile_flags"), "--layout auto --cpu-conv auto");
  const std::string run_id = first.trainer->state().run_id;
  EXPECT_EQ(read_training_state(dir.path()).run_id, run_id);
  EXPECT_NE(straight.trainer->state().run_id, run_id) << "two runs, one id";
  first.trainer.reset();  // the stopped run's end: its lock on the directory goes with it
  TrainingRun second(kTinyNet, "synthetic:128", quick(3, dir.path()));
  EXPECT_EQ(second.trainer->resume(dir.path()).epoch, 1);
  EXPECT_EQ(second.trainer->state().step, 6);
  EXPECT_EQ(second.trainer->state().run_id, run_id) << "a resumed run is the same run";
  second.trainer->run();
  EXPECT_EQ(read_training_state(dir.path()).run_id, run_id);

  EXPECT_EQ(second.trainer->state().step, 18);
  EXPECT_EQ(second.parameters(), straight.parameters());
  EXPECT_EQ(second.state(), straight.state());
  EXPECT_EQ(to_vector<float>(second.ctx, second.trainer->optimizer().velocity()),
            to_vector<float>(straight.ctx, straight.trainer->optimizer().velocity()));
}

TEST(Trainer, ResumingRefusesOtherSettingsAndFinishedRuns) {
  testing::TempDir dir;
  TrainerOptions options = quick(1, dir.path());
  options.config["precision"] = "fp32";
  TrainingRun first(kTinyNet, "synthetic:64", options);
  first.trainer->run();

  TrainerOptions other = quick(3, dir.path());
  other.config["lr"] = "0.1";
  TrainingRun second(kTinyNet, "synthetic:64", other);
  try {
    second.trainer->resume(dir.path());
    FAIL() << "resumed with another learning rate";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), cat("--resume ", dir.path(), ": this run's lr is '0.1', the checkpoint's is '0.05'; "
                                                               "resume with the same settings"));
  }
  // A setting that differs is named before one the checkpoint lacks:
  // "loss_scale_init" comes before "precision", and an fp32 run has none.
  TrainerOptions fp16 = quick(3, dir.path());
  fp16.config["precision"] = "fp16";
  fp16.config["loss_scale_init"] = "65536";
  TrainingRun third(kTinyNet, "synthetic:64", fp16);
  EXPECT_EQ(testing::message_of<ConfigError>([&] { third.trainer->resume(dir.path()); }),
            cat("--resume ", dir.path(), ": this run's precision is 'fp16', the checkpoint's is 'fp32'; resume with "
                "the same settings"));
  TrainingRun done(kTinyNet, "synthetic:64", quick(1, dir.path()));
  try {
    done.trainer->resume(dir.path());
    FAIL() << "resumed a finished run";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), cat("--resume ", dir.path(), ": the checkpoint has finished epoch 1 of 1; ask "
                                                               "for more epochs to continue"));
  }
}

// The number of epochs may grow on a resume, never shrink.
TEST(Trainer, ResumingRefusesFewerEpochsThanTheRunAskedFor) {
  testing::TempDir dir;
  TrainerOptions planned = quick(1, dir.path());
  planned.config["epochs"] = "4";  // a run of 4 epochs, stopped after the first
  TrainingRun first(kTinyNet, "synthetic:64", planned);
  first.trainer->run();
  TrainerOptions fewer = quick(2, dir.path());
  fewer.config["epochs"] = "2";
  TrainingRun second(kTinyNet, "synthetic:64", fewer);
  EXPECT_EQ(testing::message_of<ConfigError>([&] { second.trainer->resume(dir.path()); }),
            cat("--resume ", dir.path(), ": this run's epochs is 2, fewer than the 4 the checkpoint's run asked for; "
                "--epochs may only grow on a resume"));
  TrainerOptions more = quick(5, dir.path());
  more.config["epochs"] = "5";
  TrainingRun third(kTinyNet, "synthetic:64", more);
  EXPECT_EQ(third.trainer->resume(dir.path()).epoch, 1);
}

// Rewrites a checkpoint file through `edit`.
void edit_file(const std::string& path, const std::function<void(SafetensorsFile&)>& edit) {
  SafetensorsFile file = read_safetensors(path);
  edit(file);
  write_safetensors(path, file);
}

// A checkpoint that lacks one of the run's settings, or whose step is not
// its epochs' steps, would resume on a default or a shifted schedule: it is
// refused, naming the file.
TEST(Trainer, ResumingRefusesACheckpointWithoutASettingOrWithAnotherStep) {
  testing::TempDir dir;
  {
    TrainingRun first(kTinyNet, "synthetic:128", quick(1, dir.path()));
    first.trainer->run();
  }
  const std::string train = dir.file("epoch-0001.train.safetensors"), model = dir.file("epoch-0001.safetensors");
  auto resume_error = [&] {
    TrainingRun second(kTinyNet, "synthetic:128", quick(2, dir.path()));
    return testing::message_of<DataError>([&] { second.trainer->resume(dir.path()); });
  };
  edit_file(train, [](SafetensorsFile& f) { f.metadata.erase("config.lr"); });
  EXPECT_EQ(resume_error(), train + ": no \"config.lr\" in its __metadata__ (every setting of the run is saved with it)");
  edit_file(train, [](SafetensorsFile& f) { f.metadata["config.lr"] = "0.05"; });
  edit_file(train, [](SafetensorsFile& f) { f.metadata["config.epochs"] = "many"; });
  EXPECT_EQ(resume_error(), train + ": __metadata__ \"config.epochs\" must be an integer from 1 to "
                                    "9223372036854775807, got 'many'");
  edit_file(train, [](SafetensorsFile& f) { f.metadata.erase("config.epochs"); });
  for (const std::string& file : {train, model}) {
    edit_file(file, [](SafetensorsFile& f) { f.metadata["step"] = "5"; });
  }
  EXPECT_EQ(resume_error(), train + ": its __metadata__ says step 5 after epoch 1; this run takes 6 steps an epoch, so "
                                    "epoch 1 ends at step 6");
}

// One run writes into a checkpoint directory at a time: a run (new or
// resumed) is refused, before its first step, while another Trainer holds
// the directory's lock, and goes on once that Trainer is gone.
TEST(Trainer, ARunIsRefusedADirectoryAnotherRunWritesInto) {
  testing::TempDir dir;
  const std::string in_use =
      cat("--checkpoint-dir ", dir.path(), " is in use by another run (process ", getpid(), " holds its lock)");
  auto first = std::make_unique<TrainingRun>(kTinyNet, "synthetic:128", quick(1, dir.path()));
  first->trainer->run();  // done; its Trainer, alive, still holds the directory

  int64_t steps = 0;
  const TrainerHooks count_steps{.on_step = [&](const StepReport&) { ++steps; }};
  TrainerOptions overwrite = quick(1, dir.path());
  overwrite.overwrite = true;
  TrainingRun replacing(kTinyNet, "synthetic:128", overwrite);
  EXPECT_EQ(testing::message_of<ConfigError>([&] { replacing.trainer->run(count_steps); }), in_use);
  EXPECT_TRUE(has_checkpoint(dir.path())) << "a refused --overwrite removed the checkpoint";
  TrainingRun resumed(kTinyNet, "synthetic:128", quick(2, dir.path()));
  resumed.trainer->resume(dir.path());
  EXPECT_EQ(testing::message_of<ConfigError>([&] { resumed.trainer->run(count_steps); }), in_use);
  EXPECT_EQ(steps, 0) << "a refused run trained";

  first.reset();
  resumed.trainer->run(count_steps);
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(read_training_state(dir.path()).epoch, 2);
}

// A floor that a broken gradient or shuffled labels cannot reach: 300 steps
// (19,200 images, a third of an epoch) of LeNet on the real Fashion-MNIST
// reach about 84% on the 10,000 test images (chance: 10%). The full
// 10-epoch run is a documented command (README), not a test.
TEST(Trainer, LeNetLearnsFashionMnistInAThirdOfAnEpoch) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed (/usr/share/datasets/fashion-mnist)";
  }
  if (testing::kUnderAddressSanitizer) {
    GTEST_SKIP() << "300 steps of LeNet take most of a minute under AddressSanitizer: the Release builds run this "
                    "accuracy bar, and the other Trainer tests take the same loop through the sanitizers";
  }
  TrainingRun run(find_net("LeNet"), "fashion-mnist",
                  {.epochs = 1, .sgd = {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f},
                   .schedule = parse_lr_schedule("cosine", "--schedule"), .seed = 1, .workers = 1,
                   .steps_per_epoch = 300},
                  64);
  std::optional<EpochReport> report;
  int64_t steps_seen = 0;
  run.trainer->run({.on_step = [&](const StepReport&) { ++steps_seen; },
                    .on_epoch = [&](const EpochReport& e) { report = e; }});
  ASSERT_TRUE(report && report->test);
  EXPECT_EQ(steps_seen, 300);
  EXPECT_EQ(report->test->samples, 10000);
  EXPECT_GT(report->test->accuracy(), 0.78) << "test loss " << report->test->loss();
  EXPECT_LT(report->test->loss(), 0.65);
  EXPECT_GT(report->train_accuracy, 0.65);
  EXPECT_GT(report->compute_seconds, 0.0);
  EXPECT_LE(report->data_wait_seconds + report->compute_seconds, report->seconds);
}

// The loss of epoch 2's first step is NaN (a parameter was poisoned after
// epoch 1): the run stops there, naming the step and where, and epoch 1's
// checkpoint stays the latest.
TEST(Trainer, ANonFiniteLossStopsTheRunAndKeepsTheLastCheckpoint) {
  testing::TempDir dir;
  TrainingRun run(kTinyNet, "synthetic:128", quick(3, dir.path()));
  try {
    run.trainer->run({.on_epoch = [&](const EpochReport&) {
      run.graph.named_parameters()[4].tensor.data<float>()[0] = std::nanf("");  // fc.weight
    }});
    FAIL() << "trained on through a NaN parameter";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("epoch 2, step 7: the loss is nan"), std::string::npos) << e.what();
    // The update of that step has spread the NaN to every parameter by the time the loss is read.
    EXPECT_NE(std::string(e.what()).find("first non-finite output: conv1 (Conv2d); non-finite parameters: "
                                         "conv1.weight"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_training_state(dir.path()).epoch, 1);
  TrainingRun resumed(kTinyNet, "synthetic:128", quick(3, dir.path()));
  resumed.trainer->resume(dir.path());
  for (float w : resumed.parameters()) ASSERT_TRUE(std::isfinite(w));
}

// With check_numerics every value is kept and checked after each step: an
// infinite weight is named where it first shows, in the forward.
TEST(Trainer, CheckNumericsNamesTheFirstNonFiniteOutput) {
  Context ctx = Context::cpu();
  Graph graph = kTinyNet.build(16);
  CompileOptions compile;
  compile.memory_reuse = MemoryReuse::kOff;
  graph.compile(ctx, compile);
  TrainerOptions options = quick(2);
  options.check_numerics = true;
  Trainer trainer(ctx, kTinyNet, graph, open_data("synthetic:128", kTinyNet.sample, 10), options);
  try {
    trainer.run({.on_epoch = [&](const EpochReport&) {
      graph.named_parameters()[0].tensor.data<float>()[0] = INFINITY;  // conv1.weight
    }});
    FAIL() << "an infinite weight went unnoticed";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("epoch 2, step 7: first non-finite output: conv1 (Conv2d)"), std::string::npos)
        << e.what();
  }
}

// An fp16 step whose scaled gradients overflow is skipped by the loss
// scaler, by design: check_numerics lets it pass, and the epoch reports it.
TEST(Trainer, CheckNumericsLetsAnFp16OverflowTheScalerSkippedPass) {
  Context ctx = Context::cpu();
  Graph graph = kTinyNet.build(16);
  CompileOptions compile;
  compile.memory_reuse = MemoryReuse::kOff;
  compile.precision = Precision::kFp16;
  graph.compile(ctx, compile);
  TrainerOptions options = quick(1);
  options.check_numerics = true;
  options.loss_scale.initial = 1e30f;  // every gradient overflows fp16 until the scale has halved far enough
  Trainer trainer(ctx, kTinyNet, graph, open_data("synthetic:128", kTinyNet.sample, 10), options);
  int64_t overflows = 0;
  trainer.run({.on_epoch = [&](const EpochReport& report) { overflows += report.overflow_steps; }});
  EXPECT_GT(overflows, 0);
}

// A communicator of two ranks that is never asked to communicate: the
// Trainer refuses --cuda-graph for a data-parallel job before it sets the
// job up.
class TwoRanks final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string_view backend() const override { return "two ranks (test)"; }
  void begin_step(Context&) override { unused(); }
  void start_average(Context&, const Tensor&) override { unused(); }
  void progress() override { unused(); }
  void wait_all(Context&) override { unused(); }
  std::vector<ReductionTime> last_times() override { unused(); }
  void broadcast(Context&, const Tensor&, int) override { unused(); }
  std::vector<std::string> all_gather(std::string_view) override { unused(); }

 private:
  [[noreturn]] static void unused() { throw Error("TwoRanks: the trainer communicated"); }
};

// --cuda-graph (docs/cuda_graphs.md): one process on a GPU only.
TEST(Trainer, ReplaysStepsOnlyInOneProcessOnAGpu) {
  Context ctx = Context::cpu();
  Graph graph = kTinyNet.build(16);
  graph.compile(ctx);
  TrainerOptions options = quick(1);
  options.cuda_graph = true;
  TwoRanks ranks;
  options.communicator = &ranks;
  try {
    Trainer trainer(ctx, kTinyNet, graph, open_data("synthetic:64", kTinyNet.sample, 10), options);
    ADD_FAILURE() << "a data-parallel run replays its steps";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--cuda-graph replays the steps of one process; a data-parallel step waits on the host "
                           "between its all-reduce buckets and is not replayed (run without mpirun)");
  }
  options.communicator = nullptr;
  try {
    Trainer trainer(ctx, kTinyNet, graph, open_data("synthetic:64", kTinyNet.sample, 10), options);
    ADD_FAILURE() << "a CPU run replays its steps";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--cuda-graph needs a CUDA device"), std::string::npos) << e.what();
  }
}

TEST(Trainer, RefusesDataThatDoesNotFitTheNetwork) {
  Context ctx = Context::cpu();
  Graph graph = resnet(ResNetConfig{.blocks = {1, 1, 1, 1}, .base_planes = 4, .image_size = 32, .classes = 5}, 2);
  graph.compile(ctx);
  const NetSpec five_classes{"Narrow", "", Shape{3, 32, 32}, 5, 2, 2, nullptr};
  try {
    Trainer(ctx, five_classes, graph, open_data("synthetic:8", Shape{3, 32, 32}, 10), {});
    FAIL() << "10 classes trained on 5 outputs";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "Narrow has 5 outputs; the training set of 'synthetic:8' has 10 classes");
  }
  try {
    Trainer(ctx, five_classes, graph, DataSplits{.spec = "nothing"}, {});
    FAIL() << "trained on no data";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "Trainer: 'nothing' has no training set");
  }
  try {
    Trainer(ctx, five_classes, graph, open_data("synthetic:8", Shape{1, 28, 28}, 5), {});
    FAIL() << "28x28 grey images fed to a 3x32x32 network";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "Narrow takes images of (3, 32, 32); the training set of 'synthetic:8' gives (1, 28, 28)");
  }
  try {
    Trainer(ctx, five_classes, graph, std::unique_ptr<BatchSource>(), nullptr, nullptr, {});
    FAIL() << "trained on no batches";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "Trainer: no training batches (a null pointer)");
  }
  try {
    LoaderBatches(std::unique_ptr<Loader>{});
    FAIL() << "batches from no loader";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "LoaderBatches: no loader (a null pointer)");
  }
}

// A network of the user's own whose images are not (C, H, W): its sample is
// whatever follows the batch, checked against the data's as it is.
TEST(Trainer, AFlatInputIsCheckedAgainstTheDataAsItIs) {
  Context ctx = Context::cpu();
  const auto flat_net = [](int batch) {
    GraphBuilder g;
    const Value x = g.input("images", {batch, 16});
    const Value labels = g.input("labels", {batch}, DType::kInt32);
    return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 4}, "fc"), labels));
  };
  const NetSpec net{"Flat", "", Shape{16}, 4, 8, 8, flat_net};
  Graph graph = net.build(8);
  graph.compile(ctx);
  const auto data = [](Shape sample) {
    return DataSplits{.spec = "made", .train = std::make_shared<SyntheticDataset>(SyntheticOptions{
                                          .size = 32, .classes = 4, .sample = std::move(sample)})};
  };
  EXPECT_EQ(testing::message_of<ConfigError>([&] { Trainer(ctx, net, graph, data(Shape{4, 4}), quick(1)); }),
            "Flat takes images of (16); the training set of 'made' gives (4, 4)");
  Trainer trainer(ctx, net, graph, data(Shape{16}), quick(1));
  EXPECT_NO_THROW(trainer.run());
}

// Options a run cannot mean are refused when the Trainer is made, not
// trained through (epochs 0 trained nothing and returned).
TEST(Trainer, RefusesOptionsARunCannotMean) {
  testing::TempDir dir;
  Context ctx = Context::cpu();
  Graph graph = kTinyNet.build(16);
  graph.compile(ctx);
  const auto refusal = [&](const std::function<void(TrainerOptions&)>& change) {
    TrainerOptions options = quick(2, dir.path());
    change(options);
    return testing::message_of<ConfigError>(
        [&] { Trainer(ctx, kTinyNet, graph, open_data("synthetic:64", kTinyNet.sample, 10), options); });
  };
  EXPECT_EQ(refusal([](TrainerOptions& o) { o.epochs = 0; }), "Trainer: epochs is 0; a run trains at least one");
  EXPECT_EQ(refusal([](TrainerOptions& o) { o.warmup_epochs = 2; }),
            "Trainer: warmup_epochs is 2 of 2 epochs; it must be from 0 to 1, leaving epochs for the schedule");
  EXPECT_EQ(refusal([](TrainerOptions& o) { o.warmup_epochs = -1; }),
            "Trainer: warmup_epochs is -1 of 2 epochs; it must be from 0 to 1, leaving epochs for the schedule");
  EXPECT_EQ(refusal([](TrainerOptions& o) { o.steps_per_epoch = -4; }),
            "Trainer: steps_per_epoch is -4; 0 means the whole set");
  EXPECT_EQ(refusal([](TrainerOptions& o) { o.config["data"] = "folder:caf\xe9"; }),
            "Trainer: the setting 'data' = 'folder:caf\\xe9' is not UTF-8 text, which a checkpoint saves every "
            "setting as");
  EXPECT_EQ(refusal([](TrainerOptions& o) { o.vocabulary = "10 words, \xff"; }),
            "Trainer: the vocabulary '10 words, \\xff' is not UTF-8 text");
}

}  // namespace
}  // namespace glassbox
