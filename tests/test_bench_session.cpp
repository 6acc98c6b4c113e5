// tests/test_bench_session.cpp: bench_nets' session (bench/support): a step
// whose loss is not finite ends the benchmark with an error naming the step
// of its mode, counted from the first warm-up step. And a flag parsed into
// what the session is compiled with (the rest: BenchNets in test_cli.cpp).
#include <gtest/gtest.h>

#include <limits>

#include "bench/support/bench_flags.h"
#include "bench/support/net_session.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"

namespace glassbox::bench {
namespace {

TEST(BenchFlags, DeterministicIsASwitchThatDefaultsToTheBuild) {
  EXPECT_EQ(parse_bench_flags({}).compile.layers.deterministic, kDeterministicByDefault);
  EXPECT_TRUE(parse_bench_flags({"--deterministic"}).compile.layers.deterministic);
  EXPECT_TRUE(parse_bench_flags({"--deterministic"}).benchmark.passed_on.empty()) << "Google Benchmark does not see it";
}

TEST(BenchFlags, NoWinogradIsASwitchThatDefaultsToWinogradWhereItPays) {
  EXPECT_TRUE(parse_bench_flags({}).compile.layers.cpu_winograd) << "Winograd where it pays, by default";
  EXPECT_FALSE(parse_bench_flags({"--no-winograd"}).compile.layers.cpu_winograd);
  EXPECT_TRUE(parse_bench_flags({"--no-winograd"}).benchmark.passed_on.empty()) << "Google Benchmark does not see it";
}

// One table of compile flags for every program (graph/compile_flags.h):
// bench_nets reads each one into the same CompileOptions as `glassbox` does.
TEST(BenchFlags, TheCompileFlagsAreGlassboxsOwn) {
  const BenchFlags flags = parse_bench_flags(
      {"--precision=tf32", "--cudnn-search", "--cpu-conv=glassbox", "--no-winograd", "--layout=nchw", "--no-nvtx"});
  const CompileOptions expected = compile_options_from_flags({{"--precision", "tf32"},
                                                              {"--cudnn-search", ""},
                                                              {"--cpu-conv", "glassbox"},
                                                              {"--no-winograd", ""},
                                                              {"--layout", "nchw"},
                                                              {"--no-nvtx", ""}});
  EXPECT_EQ(flags.compile.precision, Precision::kTf32);
  EXPECT_EQ(flags.compile.precision, expected.precision);
  EXPECT_EQ(flags.compile.layers.algo_search, AlgoSearch::kMeasured);
  EXPECT_EQ(flags.compile.layers.cpu_conv, CpuConvPath::kGlassbox);
  EXPECT_FALSE(flags.compile.layers.cpu_winograd);
  EXPECT_EQ(flags.compile.layout, LayoutChoice::kNchw);
  EXPECT_FALSE(flags.compile.nvtx);
  EXPECT_TRUE(flags.benchmark.passed_on.empty()) << "Google Benchmark sees none of them";
  for (const FlagSpec& spec : compile_flags()) {
    const std::string flag = spec.value_name.empty() ? spec.name + "=1" : spec.name;
    EXPECT_THROW(parse_bench_flags({flag}), ConfigError) << flag << ": a switch takes no value, a flag needs one";
  }
}

// A flag that this run leaves without effect is named, never taken in silence.
TEST(BenchFlags, FlagsWithoutEffectInThisRunAreNamed) {
  EXPECT_TRUE(idle_flag_notes(parse_bench_flags({}), 1).empty());
  EXPECT_EQ(idle_flag_notes(parse_bench_flags({"--workers=3"}), 1),
            std::vector<std::string>{"--workers sets the data loader's threads for --data; without it the steps read "
                                     "synthetic batches, which need none"});
  EXPECT_TRUE(idle_flag_notes(parse_bench_flags({"--workers=3", "--data=fashion-mnist"}), 1).empty());
  const BenchFlags parallel = parse_bench_flags({"--bucket-mb=5", "--no-overlap", "--comm-timeout=5"});
  ASSERT_EQ(idle_flag_notes(parallel, 1).size(), 3u);
  EXPECT_EQ(idle_flag_notes(parallel, 1)[1],
            "--no-overlap applies to the data-parallel step, under mpirun or with --data-parallel; this job is one "
            "process without it");
  EXPECT_TRUE(idle_flag_notes(parallel, 2).empty());
  EXPECT_TRUE(idle_flag_notes(parse_bench_flags({"--no-overlap", "--data-parallel"}), 1).empty());
  EXPECT_EQ(idle_flag_notes(parse_bench_flags({"--steps=2", "--benchmark_min_time=5"}), 1),
            std::vector<std::string>{"--benchmark_min_time has no effect beside --steps, which fixes every "
                                     "benchmark's timed steps"});
}

TEST(BenchFlags, ThreadsIsOursNotGoogleBenchmarks) {
  EXPECT_EQ(parse_bench_flags({}).threads, 0) << "0: OMP_NUM_THREADS or one per core";
  EXPECT_EQ(parse_bench_flags({"--threads=3"}).threads, 3);
  EXPECT_TRUE(parse_bench_flags({"--threads=3"}).benchmark.passed_on.empty()) << "Google Benchmark does not see it";
}

// Note [Threads on a shared machine]: fitted to the free cores unless fixed.
TEST(BenchFlags, FixedThreadsIsASwitch) {
  EXPECT_FALSE(parse_bench_flags({}).fixed_threads);
  EXPECT_TRUE(parse_bench_flags({"--fixed-threads"}).fixed_threads);
  EXPECT_TRUE(parse_bench_flags({"--fixed-threads"}).benchmark.passed_on.empty()) << "Google Benchmark does not see it";
  EXPECT_EQ(testing::message_of<ConfigError>([] { parse_bench_flags({"--fixed-threads=2"}); }),
            "--fixed-threads takes no value");
}

TEST(BenchFlags, WarmupIsOursNotGoogleBenchmarks) {
  EXPECT_EQ(parse_bench_flags({}).warmup, 10) << "DESIGN.md section 5's 10 warm-up steps";
  EXPECT_EQ(parse_bench_flags({"--warmup=2"}).warmup, 2);
  EXPECT_TRUE(parse_bench_flags({"--warmup=2"}).benchmark.passed_on.empty()) << "Google Benchmark does not see it";
}

// Note [Filters match the printed names]: each end anchor, and only those,
// also lets through the suffixes that Google Benchmark adds to a registered
// name and the printed names leave out.
TEST(PlainNameFilter, WidensEachEndAnchorAndNothingElse) {
  const std::string suffixes = "(/iterations:[0-9]+)?(/(manual|real|process)_time)?$";
  EXPECT_EQ(plain_name_filter("^GEMM/16x100x150$"), "^GEMM/16x100x150" + suffixes);
  EXPECT_EQ(plain_name_filter("^A$|^B$"), "^A" + suffixes + "|^B" + suffixes);
  EXPECT_EQ(plain_name_filter("(VGG16|LeNet)/train_step$"), "(VGG16|LeNet)/train_step" + suffixes);
  EXPECT_EQ(plain_name_filter("batch:[[:digit:]]+$"), "batch:[[:digit:]]+" + suffixes);
  for (const char* unanchored : {"VGG16", "^GEMM/16x100x150/", "a\\$", "cost[$]", "[]$]x", "[^]$]", "[[:alpha:]$]"}) {
    EXPECT_EQ(plain_name_filter(unanchored), unanchored) << "no end anchor in " << unanchored;
  }
  EXPECT_EQ(plain_name_filter("[ab"), "[ab") << "an unclosed bracket is Google Benchmark's to refuse";
  EXPECT_EQ(plain_name_filter("a\\"), "a\\");
}

TEST(PlainName, DropsTheSuffixesGoogleBenchmarkAdds) {
  EXPECT_EQ(plain_name("GEMM/16x100x150/manual_time"), "GEMM/16x100x150");
  EXPECT_EQ(plain_name("LeNet/train_step/batch:64/iterations:20/manual_time"), "LeNet/train_step/batch:64");
  EXPECT_EQ(plain_name("ImageFolder/load/3x224x224/training/real_time"), "ImageFolder/load/3x224x224/training");
  EXPECT_EQ(plain_name("allreduce/single/ranks:1/bytes:4096/iterations:1000/manual_time"),
            "allreduce/single/ranks:1/bytes:4096");
  EXPECT_EQ(plain_name("VGG16/inference/batch:2"), "VGG16/inference/batch:2");
}

// Google Benchmark's flags reach it checked: a filter widened, the output
// file kept back (Note [Writing --benchmark_out ourselves]), --help passed on
// in the spelling it reads.
TEST(GoogleBenchmarkFlags, TakesEachCheckedAndPassesOnWhatGoogleBenchmarkReads) {
  GoogleBenchmarkFlags flags;
  for (const char* arg : {"--benchmark_filter=^A$", "--benchmark_out=x.json", "-h", "--benchmark_format=json",
                          "--benchmark_no_such_flag"}) {
    take_google_benchmark_flag(arg, flags);
  }
  EXPECT_EQ(flags.filter, "^A$");
  EXPECT_EQ(flags.out_path, "x.json");
  EXPECT_TRUE(flags.help);
  EXPECT_EQ(flags.display_format, ReportFormat::kJson);
  EXPECT_EQ(flags.passed_on,
            (std::vector<std::string>{"--benchmark_filter=" + plain_name_filter("^A$"), "--help",
                                      "--benchmark_format=json", "--benchmark_no_such_flag"}));
  // Google Benchmark's flags are --benchmark_* and --v; it names an unknown one of those itself.
  EXPECT_EQ(testing::message_of<ConfigError>([&] { take_google_benchmark_flag("--no-such-flag", flags); }),
            "unknown flag '--no-such-flag'; --help lists the flags");
  // Yes and no in any case, as Google Benchmark reads them; an empty filter
  // (all); an output path of any bytes (it is not written into the results).
  GoogleBenchmarkFlags more;
  for (const char* arg : {"--benchmark_list_tests=True", "--benchmark_filter=", "--benchmark_out=caf\xe9.json",
                          "--benchmark_counters_tabular=OFF"}) {
    take_google_benchmark_flag(arg, more);
  }
  EXPECT_TRUE(more.list_tests);
  EXPECT_EQ(more.filter, "");
  EXPECT_EQ(more.out_path, "caf\xe9.json");
  try {
    take_google_benchmark_flag("--help", flags);
    FAIL() << "--help after -h was taken";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "--help is given twice; give it once");
  }
}

// Note [Minimum time with a unit]: "0.05s", the newer spelling, and "0.05"
// both reach Google Benchmark as the bare number it reads.
TEST(BenchFlags, MinTimeTakesSecondsWithOrWithoutTheUnit) {
  for (const char* given : {"--benchmark_min_time=0.05s", "--benchmark_min_time=0.05"}) {
    const BenchFlags flags = parse_bench_flags({given});
    EXPECT_TRUE(flags.benchmark.user_min_time) << given;
    EXPECT_EQ(flags.benchmark.passed_on, std::vector<std::string>{"--benchmark_min_time=0.05"}) << given;
  }
  try {
    parse_bench_flags({"--benchmark_min_time=100x"});
    FAIL() << "a count of iterations was taken as a time";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "--benchmark_min_time=100x: a count of iterations is not a minimum time here; "
                                     "give seconds (--benchmark_min_time=0.5s or --benchmark_min_time=0.5)");
  }
}

TEST(NetSession, ANonFiniteLossIsAnErrorNamingTheStep) {
  const NetSpec net = find_net("LeNet");
  NetSession session(net, {.net = "LeNet", .batch = 4, .device = Device::cpu()}, CompileOptions{});
  for (int i = 0; i < 3; ++i) {
    session.step(StepMode::kForward);
    EXPECT_TRUE(std::isfinite(session.checked_loss(StepMode::kForward)));
  }
  const Tensor& bias = session.graph().node("fc5").params[1];
  std::vector<float> values = to_vector<float>(session.ctx(), bias);
  values[3] = std::numeric_limits<float>::quiet_NaN();
  from_vector<float>(session.ctx(), values, bias);
  session.step(StepMode::kForward);
  try {
    session.checked_loss(StepMode::kForward);
    FAIL() << "a NaN loss passed";
  } catch (const NumericalError& e) {
    EXPECT_STREQ(e.what(), "step 4: the loss is nan; first non-finite output: fc5 (Linear); non-finite parameters: "
                           "fc5.bias");
  }
  session.begin(StepMode::kTrainStep);
  session.step(StepMode::kTrainStep);  // another mode counts its own steps
  EXPECT_THROW(
      {
        try {
          session.checked_loss(StepMode::kTrainStep);
        } catch (const NumericalError& e) {
          EXPECT_EQ(std::string(e.what()).substr(0, 8), "step 1: ");
          throw;
        }
      },
      NumericalError);
}

// The optimizer's state exists only while train_step runs, and each plan
// takes only its own modes.
TEST(NetSession, OptimizerStateOnlyForTrainStepAndEachModeOnItsPlan) {
  const NetSpec net = find_net("LeNet");
  auto optimizer_bytes = [](NetSession& s) {
    return s.ctx().memory().current[static_cast<size_t>(MemoryCategory::kOptimizerState)];
  };
  NetSession training(net, {.net = "LeNet", .batch = 4, .device = Device::cpu()}, CompileOptions{});
  try {
    training.step(StepMode::kTrainStep);
    FAIL() << "a train step without an optimizer";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "train_step before begin(train_step): no optimizer");
  }
  training.begin(StepMode::kTrainStep);
  EXPECT_GT(optimizer_bytes(training), 0);
  training.step(StepMode::kTrainStep);
  training.begin(StepMode::kForwardBackward);
  EXPECT_EQ(optimizer_bytes(training), 0);
  try {
    training.begin(StepMode::kInference);
    FAIL() << "inference on a training plan";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "inference on a session compiled for training");
  }

  NetSession inference(net, {.net = "LeNet", .batch = 4, .device = Device::cpu(), .phase = Phase::kInference},
                       CompileOptions{});
  inference.begin(StepMode::kInference);
  inference.step(StepMode::kInference);
  EXPECT_TRUE(std::isfinite(inference.checked_loss(StepMode::kInference)));
  EXPECT_EQ(inference.ctx().memory().current[static_cast<size_t>(MemoryCategory::kGradients)], 0);
}

}  // namespace
}  // namespace glassbox::bench

namespace glassbox::bench {
namespace {

// bench_nets --data: a session on real data fills its inputs from the
// training set, epoch after epoch; a session without --data refuses.
TEST(NetSession, RealDataFillsTheInputsBatchAfterBatch) {
  const NetSpec net = find_net("LeNet");
  NetSession real(net, {.net = "LeNet", .batch = 32, .device = Device::cpu(), .data = "synthetic:64"},
                  CompileOptions{});
  std::vector<std::vector<int>> labels;
  for (int i = 0; i < 3; ++i) {  // two batches an epoch: the third starts epoch 2
    EXPECT_GE(real.next_real_batch(1), 0.0);
    labels.push_back(to_vector<int>(real.ctx(), real.graph().input("labels")));
    real.step(StepMode::kForward);
  }
  EXPECT_NE(labels[0], labels[1]);
  std::vector<int> epoch1 = labels[0];
  epoch1.insert(epoch1.end(), labels[1].begin(), labels[1].end());
  std::sort(epoch1.begin(), epoch1.end());
  std::vector<int> expected(64);
  for (int i = 0; i < 64; ++i) expected[static_cast<size_t>(i)] = i % 10;  // synthetic labels: index % classes
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(epoch1, expected) << "the first two batches are the whole first epoch";

  NetSession synthetic(net, {.net = "LeNet", .batch = 4, .device = Device::cpu()}, CompileOptions{});
  try {
    synthetic.next_real_batch(1);
    FAIL() << "a session without --data gave a real batch";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "next_real_batch: the session of LeNet has no --data");
  }
}

}  // namespace
}  // namespace glassbox::bench
