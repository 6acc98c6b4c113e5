// tests/test_cli.cpp: the glassbox tool and bench_nets, run as a user runs
// them: exit codes and what they print.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tensor/cpu_blas.h"
#include "tensor/machine_load.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"
#include "tests/support/temp_dir.h"

namespace {

using Outcome = glassbox::testing::CommandOutcome;
using glassbox::cpu_gemm_name;
using glassbox::cpu_path_name;
using glassbox::testing::contains;
using glassbox::testing::contains_match;
using glassbox::testing::first_match;
Outcome run(const std::string& command) { return glassbox::testing::run_command(command); }

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

TEST(Cli, UsageErrorsListTheChoicesAndExitTwo) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"", "usage: glassbox <command> <network> [flags]"},
      {"sumary VGG16",
       "glassbox: unknown command 'sumary'; valid: summary, time, trace, kernels, sweep, max-batch, train, eval, "
       "make-folder, scale, report, corpus"},
      {"summary LeNet --device cpu", "glassbox: summary: --device is for --memory (the table itself does not"},
      {"summary LeNet --precision bf16", "glassbox: summary: --precision is for --memory (the table itself does not"},
      {"max-batch LeNet --memory-limit 2GB", "glassbox: --memory-limit must be a size like 512MiB or 2GiB"},
      {"max-batch LeNet --max 0", "glassbox: --max must be an integer from 1 to 2147483647, got '0'"},
      {"max-batch", "glassbox: max-batch takes one network name (got 0)"},
      {"summary vgg17", "glassbox: unknown network 'vgg17'; valid: LeNet, AlexNet, VGG11, VGG13, VGG16, VGG19"},
      {"summary", "glassbox: summary takes one network name (got 0); valid: LeNet, AlexNet"},
      {"summary VGG16 --bogus", "glassbox: unknown flag '--bogus' for 'summary'; valid: --batch"},
      {"time LeNet --batch 0", "glassbox: --batch must be an integer from 1 to 2147483647, got '0'"},
      {"time LeNet --steps", "glassbox: --steps needs a value (--steps N)"},
      {"time LeNet --device gpu", "glassbox: --device: unknown device 'gpu'; valid: cpu, cuda, cuda:N"},
      {"time LeNet --precision fp8", "glassbox: unknown precision 'fp8'; valid: fp32, tf32, bf16, fp16"},
      // Numbers are read whole and range-checked (tensor/parse.h), never bent by atoi or thrown by stoi.
      {"time LeNet --device cuda:99999999999",
       "glassbox: --device index in 'cuda:99999999999' must be an integer from 0 to 2147483647, got '99999999999'"},
      {"summary VGG16 --batch 1e3", "glassbox: --batch must be an integer from 1 to 2147483647, got '1e3'"},
      {"summary VGG16 --batch 8abc", "glassbox: --batch must be an integer from 1 to 2147483647, got '8abc'"},
      {"summary VGG16 --batch 2147483648",
       "glassbox: --batch must be an integer from 1 to 2147483647, got '2147483648'"},
      {"time LeNet --steps 0", "glassbox: --steps must be an integer from 1 to 1000000, got '0'"},
      {"time LeNet --warmup -1", "glassbox: --warmup must be an integer from 0 to 1000000, got '-1'"},
      {"time LeNet --threads 0", "glassbox: --threads must be an integer from 1 to 1024, got '0'"},
      {"summary LeNet --threads", "glassbox: --threads needs a value: the CPU threads, e.g. --threads 2"},
      {"summary LeNet --threads 1 --threads=2", "glassbox: --threads is given twice ('1' and '2'); give it once"},
      {"summary LeNet --threads=0", "glassbox: --threads must be an integer from 1 to 1024, got '0'"},
      {"summary VGG16 --batch 2 --batch 3", "glassbox: --batch is given twice ('2' and '3'); give it once"},
      {"time LeNet --device=", "glassbox: --device needs a value (--device D), got an empty one"},
      {"time LeNet --cudnn-search=1", "glassbox: --cudnn-search takes no value"},
      {"time LeNet --deterministic=1", "glassbox: --deterministic takes no value"},
      {"time LeNet --deterministic --deterministic", "glassbox: --deterministic is given twice; give it once"},
      {"summary VGG16 VGG19", "glassbox: summary takes one network name (got 2)"},
      {"summary VGG16 -b 2", "glassbox: unknown flag '-b' for 'summary'; valid: --batch"},
      // A batch whose tensors cannot be represented is refused at the builder, naming the layer.
      {"summary VGG16 --batch 999999999",
       "glassbox: VGG16 at batch 999999999 is too large: conv1_1 (Conv2d): shape (999999999, 64, 224, 224) has "
       "more than 2^48 = 281474976710656 elements, the most a tensor may have"},
  };
  for (const auto& c : cases) {
    const Outcome r = run(kCli + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << "glassbox " << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "glassbox " << c.args << " printed:\n" << r.output;
  }
}

TEST(Cli, SummaryPrintsTheLayerTableAndTotals) {
  const Outcome r = run(kCli + " summary VGG16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"conv5_3", "Conv2d", "(1, 512, 14, 14)", "3x3 s1 p1, 512 -> 512", "2,359,808",
                               "138,357,544", "15.470 GMAC", "30.941 GFLOP"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

TEST(Cli, TimePrintsLayersAgainstTheMeasuredStep) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 8 --steps 2 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string peak_source = "(measured: " + std::string(cpu_gemm_name()) + " GEMM 1024^3, copy 256 MiB)";
  for (const std::string& expected :
       {std::string("LeNet on cpu"), std::string("conv1"), std::string("backward-data"),
        std::string("backward-weights"), std::string("% roofline"), std::string("peaks: "), peak_source,
        std::string("sum of layers: forward"), std::string("measured step:"), std::string("images/s"),
        std::string("memory over the timed steps"), std::string("activation gradients"),
        std::string("fused into conv1")}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
  const Outcome unfused = run(kCli + " time LeNet --device cpu --batch 8 --steps 1 --warmup 0 --no-fusion");
  ASSERT_EQ(unfused.exit_code, 0) << unfused.output;
  EXPECT_FALSE(contains(unfused.output, "fused into")) << unfused.output;
}

// A batch norm takes the ReLU after it, forward and backward (docs/fusion.md):
// `time` says so on both rows, and the ReLU's passes move no bytes.
TEST(Cli, TimeNamesAReluFusedIntoItsBatchNorm) {
  const glassbox::testing::TempDir dir;
  const std::string path = dir / "time.json";
  const Outcome r = run(kCli + " time ResNet56 --device cpu --batch 2 --steps 1 --warmup 0 --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "fused into bn1, forward and backward")) << r.output;
  EXPECT_TRUE(contains(r.output, "ReLU applied in the layer, forward and backward")) << r.output;
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  int fused = 0, adds = 0, residuals = 0;
  for (const auto& layer : doc.at("layers")) {
    if (layer.at("residual") != "") ++residuals;
    if (layer.at("backward_fused_into") == "") continue;
    ++fused;
    EXPECT_EQ(layer.at("backward_fused_into"), layer.at("fused_into")) << layer.at("name");
    if (layer.at("type") == "Add") ++adds;
    EXPECT_TRUE(layer.at("type") == "ReLU" || layer.at("type") == "Add") << layer.at("name");
    for (const auto& pass : layer.at("passes")) EXPECT_EQ(pass.at("bytes").get<int64_t>(), 0) << layer.at("name");
  }
  // ResNet-56: the stem's ReLU and the first ReLU of each of its 27 blocks
  // follow a batch norm. The second follows the residual add, which the
  // block's last batch norm does together with it in the 25 blocks whose
  // shortcut is the identity; the 2 subsampling shortcuts are listed after
  // that batch norm (Note [A residual add fused into its batch norm]).
  EXPECT_EQ(adds, 25);
  EXPECT_EQ(residuals, 25);
  EXPECT_EQ(fused, 28 + 2 * 25);
  EXPECT_TRUE(contains(r.output, "ReLU applied in the layer after adding layer1.0.relu2, forward and backward"))
      << r.output;
}

// bf16 (docs/precision.md): the header names the precision, the memory
// table what each category holds.
TEST(Cli, TimeInBf16NamesTheElementTypesOfItsMemory) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 8 --steps 2 --warmup 1 --precision bf16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string expected :
       {"batch 8, bf16 (mixed: 16-bit values, fp32 master weights and accumulation)",
        "float32 master weights and their bfloat16 working copy", "bfloat16, kept for backward and in flight",
        "fp32, staged from bf16",
        "on a GPU with each 16-bit convolution's and Linear's bfloat16 scratch of its weight gradient",
        "the staging of the tensors a layer takes in another type"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

// OMP_DYNAMIC=true let libgomp shrink a team under oneDNN's barriers, and a
// step never ended (Note [Whole OpenMP teams]): with it, a step still runs.
TEST(Cli, TimeFinishesWithOpenMpDynamicAdjustmentRequested) {
  const Outcome r = run("OMP_DYNAMIC=true OMP_NUM_THREADS=2 timeout 120 " + kCli +
                        " time LeNet --device cpu --batch 8 --steps 2 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "measured step: ")) << r.output;
}

// `glassbox time ARGS --json PATH`'s document; a failed run fails the test
// (and leaves an empty document, whose fields the test then lacks).
nlohmann::json time_document(const std::string& args, const std::string& path) {
  const Outcome r = run(kCli + " time " + args + " --json " + path);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return nlohmann::json::object();
  std::ifstream file(path);
  return nlohmann::json::parse(file);  // throws, failing the test, if it does not parse
}

// A language model's rate counts tokens (batch x window), and says so; a
// report of it too.
TEST(Cli, ALanguageModelsTimeJsonCountsTokens) {
  const glassbox::testing::TempDir dir;
  const std::string path = dir / "time.json";
  const nlohmann::json doc = time_document("LSTMSmall --device cpu --batch 2 --steps 1 --warmup 0", path);
  EXPECT_FALSE(doc.contains("images_per_s"));
  EXPECT_NEAR(doc.at("tokens_per_s").get<double>(), 2 * 20 / (doc.at("step_ms").get<double>() / 1e3), 1e-6);
  const Outcome report = run(kCli + " report " + path + " --out " + (dir / "time.html"));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::ifstream html(dir / "time.html");
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(page, " tokens/s")) << "the report's throughput row";
}

TEST(Cli, TimeJsonHasEveryLayerWithThePassesItRan) {
  const glassbox::testing::TempDir dir;
  const std::string path = dir / "time.json";
  const nlohmann::json doc = time_document("LeNet --device cpu --batch 8 --steps 1 --warmup 0", path);
  EXPECT_EQ(doc.at("kind"), "glassbox.time");
  EXPECT_EQ(doc.at("version"), 1);
  EXPECT_EQ(doc.at("network"), "LeNet");
  EXPECT_EQ(doc.at("batch"), 8);
  EXPECT_EQ(doc.at("device"), "cpu");
  EXPECT_EQ(doc.at("steps"), 1);
  EXPECT_EQ(doc.at("phase"), "training");
  EXPECT_GT(doc.at("step_ms").get<double>(), 0.0);
  EXPECT_GT(doc.at("images_per_s").get<double>(), 0.0);
  EXPECT_TRUE(doc.at("runtime").contains("build"));
  EXPECT_GT(doc.at("peak").at("flops_per_s").get<double>(), 0.0);
  EXPECT_GT(doc.at("peak").at("bytes_per_s").get<double>(), 0.0);
  EXPECT_EQ(doc.at("peak").at("source"), "measured: " + std::string(cpu_gemm_name()) + " GEMM 1024^3, copy 256 MiB");
  EXPECT_GT(doc.at("memory").at("parameters").get<int64_t>(), 0);
  EXPECT_GT(doc.at("memory").at("peak").get<int64_t>(), 0);
  // LeNet: conv1 relu1 pool1 conv2 relu2 pool2 flatten fc3 relu3 fc4 relu4 fc5 loss.
  const nlohmann::json& layers = doc.at("layers");
  ASSERT_EQ(layers.size(), 13u);
  auto passes = [&](const std::string& name) {
    std::vector<std::string> names;
    for (const auto& layer : layers) {
      if (layer.at("name") != name) continue;
      const bool fused = layer.at("fused_into") != "";  // Note [A ReLU fused into its producer]
      for (const auto& pass : layer.at("passes")) {
        names.push_back(pass.at("pass"));
        EXPECT_GE(pass.at("ms").get<double>(), 0.0);
        if (fused && pass.at("pass") == "forward") {
          EXPECT_EQ(pass.at("bytes").get<int64_t>(), 0) << name << ": its producer wrote its output";
        } else {
          EXPECT_GT(pass.at("bytes").get<int64_t>(), 0) << name;
        }
      }
    }
    return names;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(passes("conv1"), (Names{"forward", "backward-weights"}));  // its input is the data
  EXPECT_EQ(passes("conv2"), (Names{"forward", "backward-data", "backward-weights"}));
  EXPECT_EQ(passes("relu1"), (Names{"forward", "backward"}));
  EXPECT_EQ(layers[1].at("name"), "relu1");
  EXPECT_EQ(layers[1].at("fused_into"), "conv1") << "conv1 applies relu1";
  EXPECT_EQ(layers[8].at("name"), "relu3");
  EXPECT_EQ(layers[8].at("fused_into"), "fc3") << "fc3 applies relu3";
  EXPECT_EQ(layers[0].at("type"), "Conv2d");
  EXPECT_EQ(layers[0].at("output"), "(8, 6, 28, 28)");
  EXPECT_EQ(layers[0].at("precision"), "fp32");
  EXPECT_EQ(layers[0].at("passes")[0].at("flops"), 2 * 8 * 6 * 28 * 28 * 25);  // 2 * N*K*P*Q * C*R*S
}

// --inference: the forward of a graph compiled for inference, as bench_nets'
// inference mode; no backward rows, the phase in the JSON.
TEST(Cli, TimeInferenceTimesTheForwardOfAnInferenceGraph) {
  const glassbox::testing::TempDir dir;
  const std::string path = dir / "time.json";
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 4 --steps 1 --warmup 0 --inference --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"timed inference forwards (a graph compiled for inference)",
                               "(analytic: 1 x 2 x ", "memory over the timed steps (inference forward)"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
  EXPECT_FALSE(contains(r.output, "backward")) << r.output;
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  EXPECT_EQ(doc.at("phase"), "inference");
  for (const auto& layer : doc.at("layers")) {
    ASSERT_EQ(layer.at("passes").size(), 1u) << layer.at("name");
    EXPECT_EQ(layer.at("passes")[0].at("pass"), "forward");
  }
  // Under mpirun, time runs data-parallel training steps: --inference there is an error, not one rank's forward.
  const Outcome ranks = run("OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "
                            "OMPI_COMM_WORLD_LOCAL_SIZE=2 " + kCli + " time LeNet --device cpu --inference");
  EXPECT_EQ(ranks.exit_code, 2) << ranks.output;
  EXPECT_TRUE(contains(ranks.output, "time: --inference times one process's forward; under mpirun (2 ranks)"))
      << ranks.output;
}

// --cuda-graph (docs/cuda_graphs.md): one process on a GPU only, refused before anything runs.
TEST(Cli, TimeReplaysStepsOnlyInOneProcessOnAGpu) {
  const Outcome cpu = run(kCli + " time LeNet --device cpu --cuda-graph");
  EXPECT_EQ(cpu.exit_code, 2) << cpu.output;
  EXPECT_TRUE(contains(cpu.output, "--cuda-graph needs a CUDA device: a step is replayed as a CUDA graph; the device "
                                   "is cpu"))
      << cpu.output;
  const Outcome ranks = run("OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "
                            "OMPI_COMM_WORLD_LOCAL_SIZE=2 " + kCli + " time LeNet --device cpu --cuda-graph");
  EXPECT_EQ(ranks.exit_code, 2) << ranks.output;
  EXPECT_TRUE(contains(ranks.output, "--cuda-graph replays the steps of one process; under mpirun (2 ranks)"))
      << ranks.output;
  EXPECT_FALSE(contains(cpu.output + ranks.output, "sum of layers"));
}

// time and train run data-parallel under mpirun; every other verb would run
// whole on each rank, printing twice and racing to write one file: refused.
TEST(Cli, VerbsOfOneProcessRefuseMpirun) {
  const std::string ranks = "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "
                            "OMPI_COMM_WORLD_LOCAL_SIZE=2 ";
  for (const char* verb : {"summary LeNet", "trace LeNet --device cpu", "max-batch LeNet --device cpu",
                           "scale LeNet --device cpu", "sweep LeNet --device cpu"}) {
    const Outcome r = run(ranks + kCli + " " + verb);
    EXPECT_EQ(r.exit_code, 2) << verb << "\n" << r.output;
    const std::string name = std::string(verb).substr(0, std::string(verb).find(' '));
    EXPECT_TRUE(contains(r.output, "glassbox: rank 0 of 2: " + name + " runs in one process; under mpirun (2 ranks) "
                                   "each would run it whole. Run it without mpirun (time and train run data-parallel)"))
        << r.output;
  }
}

// The data-parallel flags given to one process are checked and named as
// doing nothing there, never taken in silence.
TEST(Cli, DataParallelFlagsInOneProcessAreNamed) {
  const Outcome r =
      run(kCli + " time LeNet --device cpu --batch 2 --steps 1 --warmup 0 --no-overlap --bucket-mb 3 --comm-timeout 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag : {"--bucket-mb", "--no-overlap", "--comm-timeout"}) {
    EXPECT_TRUE(contains(r.output, std::string("glassbox: ") + flag +
                                       " applies under mpirun, to the all-reduce of the gradients; this run is one "
                                       "process, which has none"))
        << r.output;
  }
}

// summary --memory reads its device and compile flags before printing: a bad
// one is refused with nothing printed first.
TEST(Cli, SummaryMemoryRefusesABadFlagBeforeTheTable) {
  const Outcome r = run(kCli + " summary LeNet --batch 2 --memory --layout bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: unknown layout 'bogus'")) << r.output;
  EXPECT_FALSE(contains(r.output, "parameters:")) << r.output;
}

TEST(Cli, TimeJsonIntoAMissingFolderFailsBeforeTheRun) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 2 --steps 1 --warmup 0 --json /nonexistent/t.json");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "/nonexistent/t.json")) << r.output;
  EXPECT_FALSE(contains(r.output, "sum of layers")) << r.output;
}

// --threads, for every command, sets the threads of every CPU kernel: time says how many ran.
TEST(Cli, ThreadsIsOneFlagForEveryCommandAndTimeSaysIt) {
  for (const char* threads : {"1 ", "3 --fixed-threads"}) {
    const Outcome r = run(kCli + " time LeNet --device cpu --batch 2 --steps 1 --warmup 0 --threads " + threads);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string said = "CPU path: " + cpu_path_name() + " + OpenMP, " + threads[0] +
                             (threads[0] == '1' ? " thread\n" : " threads\n");
    EXPECT_TRUE(contains(r.output, said)) << "missing '" << said << "' in:\n" << r.output;
  }
  const Outcome summary = run(kCli + " summary LeNet --threads 1");
  EXPECT_EQ(summary.exit_code, 0) << summary.output;
  const Outcome joined = run(kCli + " summary LeNet --threads=1");
  EXPECT_EQ(joined.exit_code, 0) << joined.output;
  // --help wins over a --threads without its value, wherever it stands.
  for (const char* words : {" summary --help --threads", " summary --threads --help"}) {
    const Outcome help = run(kCli + words);
    EXPECT_EQ(help.exit_code, 0) << words << "\n" << help.output;
    EXPECT_TRUE(contains(help.output, "usage: glassbox summary <network> [flags]")) << words << "\n" << help.output;
  }
}

// Note [Threads on a shared machine]: a measuring run takes no more threads
// than there are cores free of other work, and says how many it took.
TEST(Cli, TimeRunsNoMoreThreadsThanFreeCoresAndSaysSo) {
  const int cores = glassbox::usable_cores();
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 2 --steps 1 --warmup 0 --threads " +
                        std::to_string(cores + 3));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> ran = first_match(r.output, "OpenMP, ([0-9]+) threads?\n");
  ASSERT_FALSE(ran.empty()) << r.output;
  const int used = std::stoi(ran[1]);
  EXPECT_GE(used, 1);
  EXPECT_LE(used, cores) << r.output;
  const std::string asked = std::to_string(cores + 3);
  EXPECT_TRUE(contains(r.output, "running " + std::to_string(used) + (used == 1 ? " thread" : " threads") +
                                     " instead of " + asked))
      << r.output;
  EXPECT_TRUE(contains(r.output, "(--fixed-threads keeps " + asked + ")")) << r.output;
}

TEST(Cli, TimePrintsTheLossOfTheFirstAndLastTimedStep) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 4 --steps 2 --warmup 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, " at the first timed step, ")) << r.output;
}

TEST(Cli, SaysOnceThatCudnnSearchDoesNothingOnTheCpu) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 2 --steps 1 --warmup 0 --cudnn-search");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string note = "glassbox: --cudnn-search chooses cuDNN algorithms; it has no effect on the CPU";
  ASSERT_TRUE(contains(r.output, note)) << r.output;
  EXPECT_EQ(r.output.find(note), r.output.rfind(note)) << "said more than once:\n" << r.output;
}

TEST(Cli, SummaryMemoryRunsAStepAndPrintsEveryCategory) {
  const Outcome r = run(kCli + " summary LeNet --batch 4 --memory --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"memory of a training step (SGD with momentum) at batch 4 on cpu", "parameters",
                               "gradients", "optimizer state", "activations", "without memory reuse",
                               "activation gradients", "workspace", "other", "total", "a forward-only plan"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

// Under a limit, the search ends at a batch that fits next to one that does
// not, and says why the larger one failed.
TEST(Cli, MaxBatchFindsTheLargestBatchUnderAMemoryLimit) {
  const Outcome r = run(kCli + " max-batch LeNet --device cpu --memory-limit 16MiB");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet on cpu, fp32 (TF32 off), values NHWC where the layers take it, memory limited "
                                 "to 16.00 MiB: one training step"))
      << r.output;
  const std::vector<std::string> found =
      first_match(r.output, "largest batch that fits: ([0-9]+) \\(([0-9]+) does not\\)");
  ASSERT_FALSE(found.empty()) << r.output;
  const int good = std::stoi(found[1]), bad = std::stoi(found[2]);
  EXPECT_EQ(bad, good + 1);
  EXPECT_GT(good, 16);
  EXPECT_TRUE(contains(r.output, "  batch " + std::to_string(good) + ": fits, peak ")) << r.output;
  EXPECT_TRUE(contains(r.output, "  batch " + std::to_string(bad) + ": does not fit: cpu: out of memory")) << r.output;
  EXPECT_TRUE(contains(r.output, "memory at batch " + std::to_string(good) + ":")) << r.output;
  // Note [Convolutions by slices of the batch]: the CPU's answer says what bisection assumes.
  EXPECT_TRUE(contains(r.output, "(on the CPU the memory need is not monotone in the batch: a convolution's workspace "
                                 "follows the batch's divisors, so a batch above " + std::to_string(bad) +
                                 " may still fit)"))
      << r.output;
}

TEST(Cli, MaxBatchSaysWhenNothingFits) {
  const Outcome r = run(kCli + " max-batch LeNet --device cpu --memory-limit 1KiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "batch 1: does not fit: cpu: out of memory")) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: max-batch: not even batch 1 fits")) << r.output;
}

// An MLP's values have no channels to put last: its header names no layout.
TEST(Cli, MaxBatchNamesALayoutOnlyForANetworkWithConvolutions) {
  const Outcome r = run(kCli + " max-batch MLP:784,10 --device cpu --memory-limit 1KiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "MLP:784,10 on cpu, fp32 (TF32 off), memory limited to 1.00 KiB: one training step"))
      << r.output;
}

TEST(Cli, TimeTakesDeterministicAndSaysItChangesNothingOnTheCpu) {
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 2 --steps 1 --warmup 0 --deterministic");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --deterministic restricts cuDNN algorithms; the CPU path is "
                                 "deterministic already"))
      << r.output;
  EXPECT_TRUE(
      contains_match(r.output, "CPU path: " + cpu_path_name() + " \\+ OpenMP, [0-9]+ threads?, deterministic\n"))
      << r.output;
}

TEST(Cli, AMemoryPlanLargerThanTheMachineFailsBeforeAllocating) {
  // LeNet at the largest batch: every shape fits (summary prints it), but its
  // activations (about 240 TiB) do not fit any machine.
  const Outcome summary = run(kCli + " summary LeNet --batch 2147483647");
  ASSERT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_FALSE(contains_match(summary.output, "[ (]-[0-9]")) << "a negative count:\n" << summary.output;
  const Outcome r = run(kCli + " time LeNet --device cpu --batch 2147483647");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const char* expected : {"glassbox: cpu: out of memory for the graph's memory plan: ", "(parameters ",
                               "activations ", "activation gradients ", " available (", "Glassbox holds 0 B"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

TEST(Cli, OutputThatCannotBeWrittenIsAFailure) {
  const Outcome r = run("{ " + kCli + " summary VGG16 > /dev/full; }");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: standard output is incomplete: writing it failed")) << r.output;
}

TEST(Cli, SummaryAndTimeTakeAnMlpSpec) {
  Outcome r = run(kCli + " summary mlp:784,32,10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"MLP:784,32,10: multilayer perceptron 784-32-10", "(1, 1, 28, 28)", "fc2",
                               "784 -> 32", "25,450"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing " << expected << " in:\n" << r.output;
  }
  r = run(kCli + " time MLP:100,16,7 --device cpu --batch 4 --steps 1 --warmup 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "MLP:100,16,7 on cpu")) << r.output;
  r = run(kCli + " summary MLP:784,10,");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: network 'MLP:784,10,': classes is empty")) << r.output;
}

// An image that cannot be decoded is skipped by default: named once on
// stderr, counted apart in train's epoch row and in eval's summary, never
// scored; with --on-bad-sample stop the run ends there, naming it.
TEST(Cli, AnUnreadableImageIsSkippedNamedAndCountedOrStopsTheRun) {
  glassbox::testing::TempDir dir;
  const std::string data = dir / "data";
  Outcome r =
      run(kCli + " make-folder --synthetic --classes 2 --train 5 --val 5 --width 200 --height 150 --out " + data);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // One bad file in each split, among 10 good ones.
  const std::string bad_train = data + "/train/class_0/2a.jpg", bad_val = data + "/val/class_0/2a.jpg";
  const std::string good = glassbox::testing::read_whole_file(data + "/train/class_0/2.jpg");
  glassbox::testing::write_file(bad_train, good.substr(0, good.size() * 3 / 4));  // cut short
  glassbox::testing::write_file(bad_val, "\x89PNG\r\n\x1a\n and the rest of a PNG");
  const std::string val_reason = ": not a JPEG file (starts with 89 50 4e 47)";

  // Batch 11: the epoch is one batch, all 11 training files.
  const std::string train =
      kCli + " train LeNet --data folder:" + data + " --epochs 1 --batch 11 --device cpu --workers 2";
  r = run(train + " --checkpoint-dir " + dir / "run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: skipping " + bad_train + ": corrupt JPEG: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: skipping " + bad_val + val_reason + "\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "  (unreadable, skipped: 1 train, 1 test)\n")) << r.output;
  EXPECT_TRUE(contains_match(r.output, "test accuracy after epoch 1: [0-9.]+% \\([0-9]+ of 10\\)")) << r.output;

  const std::string eval = kCli + " eval LeNet --weights " + dir / "run/epoch-0001.safetensors" + " --data folder:" +
                           data + " --batch 4 --device cpu --workers 3";
  r = run(eval);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: skipping " + bad_val + val_reason + "\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "\n11 images, 1 unreadable, not scored (" + bad_val + val_reason + ")\n")) << r.output;
  EXPECT_TRUE(contains_match(r.output, "accuracy: [0-9.]+% \\([0-9]+ of 10\\)")) << r.output;

  const std::string stops = " (an unreadable image stops this run; --on-bad-sample skip leaves such images out, named "
                            "and counted)";
  r = run(eval + " --on-bad-sample stop");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: " + bad_val + val_reason + stops)) << r.output;
  EXPECT_FALSE(contains(r.output, "accuracy: ")) << r.output;
  r = run(train + " --on-bad-sample stop");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: " + bad_train + ": corrupt JPEG: ")) << r.output;
  EXPECT_TRUE(contains(r.output, stops)) << r.output;
}

TEST(Cli, OnBadSampleIsSkipOrStopAndGoesWithData) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"eval LeNet --weights w --data synthetic --device cpu --on-bad-sample maybe",
       "glassbox: --on-bad-sample must be skip or stop, got 'maybe'"},
      {"eval LeNet --weights w --input x --on-bad-sample stop",
       "glassbox: --on-bad-sample goes with --data SPEC: it says what to do with an image of the data that cannot be "
       "read"},
      {"train LeNet --data synthetic:64 --batch 4 --device cpu --on-bad-sample Stop",
       "glassbox: --on-bad-sample must be skip or stop, got 'Stop'"},
  };
  for (const auto& c : cases) {
    const Outcome r = run(kCli + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << "\n" << r.output;
  }
}

}  // namespace
