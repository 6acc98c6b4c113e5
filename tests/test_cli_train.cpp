// tests/test_cli_train.cpp: `glassbox train` and `glassbox eval` run as a
// user runs them: what they print and write, resuming, and every usage error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tensor/safetensors.h"
#include "tests/support/command.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::run_command;

const std::string kCli = GLASSBOX_CLI_PATH;

testing::CommandOutcome glassbox(const std::string& arguments) { return run_command(kCli + " " + arguments); }

int count_lines(const std::string& path, const std::string& needle) {
  std::ifstream file(path);
  int count = 0;
  for (std::string line; std::getline(file, line);) count += contains(line, needle) ? 1 : 0;
  return count;
}

TEST(CliTrain, TrainsCheckpointsLogsAndResumes) {
  testing::TempDir dir;
  const std::string run = dir.file("run"), log = dir.file("log.jsonl");
  const std::string common = "LeNet --data synthetic:256 --batch 16 --device cpu --workers 1 --checkpoint-dir " + run +
                             " --log " + log;
  testing::CommandOutcome r = glassbox("train " + common + " --epochs 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "LeNet on cpu")) << r.output;
  EXPECT_TRUE(contains(r.output, "data: synthetic:256")) << r.output;
  EXPECT_TRUE(contains(r.output, "2 epochs of 16 steps; checkpoints in " + run)) << r.output;
  EXPECT_TRUE(contains(r.output, "epoch  train loss  train acc  test loss  test acc  time (s)   data wait")) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\n  2/2 +[0-9.]+ +[0-9.]+% +[0-9.]+ +[0-9.]+%"))) << r.output;
  EXPECT_TRUE(contains(r.output, "test accuracy after epoch 2: ")) << r.output;
  // Not a terminal: plain progress lines, no control characters.
  // Not a terminal: a plain line at each tenth of the epoch, no control characters.
  EXPECT_TRUE(contains(r.output, "  epoch 1/2 step 1/16  loss ")) << r.output;
  EXPECT_FALSE(contains(r.output, "\x1b[K")) << r.output;
  for (const char* file : {"epoch-0001.safetensors", "epoch-0002.safetensors", "epoch-0002.train.safetensors",
                           "latest"}) {
    EXPECT_TRUE(std::filesystem::exists(run + "/" + file)) << file;
  }
  EXPECT_EQ(count_lines(log, "\"event\":\"start\""), 1);
  EXPECT_EQ(count_lines(log, "\"event\":\"epoch\""), 2);

  // Resumed with the saved settings, to a third epoch; the log goes on.
  r = glassbox("train LeNet --resume " + run + " --epochs 3 --device cpu --workers 1 --log " + log);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "3 epochs of 16 steps, resumed after epoch 2")) << r.output;
  EXPECT_TRUE(contains(r.output, "data: synthetic:256")) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\n  3/3 "))) << r.output;
  EXPECT_FALSE(std::regex_search(r.output, std::regex("\n  2/3 "))) << r.output;
  EXPECT_EQ(count_lines(log, "\"event\":\"epoch\""), 3);
  EXPECT_TRUE(std::filesystem::exists(run + "/epoch-0003.safetensors"));

  // Another setting than the checkpoint's is refused, naming both.
  r = glassbox("train LeNet --resume " + run + " --epochs 4 --lr 0.1 --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "this run's lr is '0.1', the checkpoint's is '0.05'")) << r.output;
  r = glassbox("train AlexNet --resume " + run + " --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --resume " + run + ": the checkpoint is of LeNet, not AlexNet")) << r.output;

  // The trained model's accuracy, and its logits for given images.
  r = glassbox("eval LeNet --weights " + run + "/epoch-0003.safetensors --data synthetic:256 --batch 50 --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("accuracy: [0-9]+\\.[0-9]{2}% \\([0-9]+ of 256\\)"))) << r.output;
  EXPECT_TRUE(contains(r.output, "loss: ")) << r.output;

  SafetensorsFile images;
  HostTensor t{.name = "images", .dtype = "F32", .shape = {3, 1, 28, 28}};
  t.bytes.resize(3 * 28 * 28 * sizeof(float));
  for (size_t i = 0; i < t.bytes.size(); i += 4) t.bytes[i + 3] = std::byte{0x3e};  // 0.125 and friends
  images.tensors.push_back(t);
  write_safetensors(dir.file("images.safetensors"), images);
  r = glassbox("eval LeNet --weights " + run + "/epoch-0003.safetensors --input " + dir.file("images.safetensors") +
               " --logits " + dir.file("logits.safetensors") + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const SafetensorsFile logits = read_safetensors(dir.file("logits.safetensors"));
  ASSERT_NE(logits.find("logits"), nullptr);
  EXPECT_EQ(logits.find("logits")->shape, (std::vector<int64_t>{3, 10}));
  r = glassbox("eval LeNet --weights " + run + "/epoch-0003.safetensors --input " + dir.file("images.safetensors") +
               " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "image 2: class ")) << r.output;
}

// A new run never mixes its checkpoints with another run's: a directory
// holding some is refused before training, unless --overwrite, which removes
// them first.
TEST(CliTrain, ANewRunRefusesAnotherRunsCheckpointDirectoryUnlessOverwriting) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  const std::string common = "train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 --steps-per-epoch 2 "
                             "--checkpoint-dir " + run;
  testing::CommandOutcome r = glassbox(common + " --epochs 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(run + "/epoch-0003.safetensors"));

  r = glassbox(common + " --epochs 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --checkpoint-dir " + run + " holds another run's checkpoints (latest: "
                                 "epoch-0003), 7 files: give --resume " + run + " to continue that run, --overwrite "
                                 "to replace it, or another directory")) << r.output;
  EXPECT_FALSE(contains(r.output, "1/1 ")) << "it trained before refusing\n" << r.output;
  EXPECT_TRUE(std::filesystem::exists(run + "/epoch-0003.safetensors")) << "a refused run removed a file";

  r = glassbox(common + " --epochs 1 --overwrite");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\n1 epoch of 2 steps; checkpoints in ")) << r.output;
  EXPECT_TRUE(std::filesystem::exists(run + "/epoch-0001.safetensors"));
  for (const char* old : {"epoch-0002.safetensors", "epoch-0002.train.safetensors", "epoch-0003.safetensors"}) {
    EXPECT_FALSE(std::filesystem::exists(run + "/" + old)) << old << " of the replaced run is still there";
  }
}

// Note [What a bit-for-bit resume needs] (train/trainer.h): a resume with
// another thread count goes on with a warning that names it, or is refused
// with --strict-resume; with the checkpoint's thread count it says nothing.
TEST(CliTrain, AResumeThatCannotBeBitForBitSaysWhy) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  testing::CommandOutcome r = glassbox("train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 "
                                       "--steps-per-epoch 2 --epochs 1 --threads 1 --checkpoint-dir " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const std::string resume = "train LeNet --resume " + run + " --device cpu --workers 1 ";
  r = glassbox(resume + "--epochs 2 --threads 2 --strict-resume");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--strict-resume: cpu_threads is '2', the checkpoint's '1'")) << r.output;

  r = glassbox(resume + "--epochs 2 --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cpu_threads is '2', the checkpoint's '1'; the run continues, but not bit for bit"))
      << r.output;

  r = glassbox(resume + "--epochs 3 --threads 2 --strict-resume");  // epoch 2 ran on 2 threads
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "not bit for bit")) << r.output;
}

// A reader that goes away (`train ... | head -c 10`) stops the run at its
// next line with a message and exit code 1, not a silent SIGPIPE.
TEST(CliTrain, AClosedStdoutStopsTheRunWithAMessage) {
  testing::TempDir dir;
  const std::string errors = dir.file("stderr.txt");
  const testing::CommandOutcome r = run_command(
      "bash -c '" + kCli + " train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 --epochs 50 "
      "--steps-per-epoch 2 2>" + errors + " | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}'");
  std::ifstream file(errors);
  const std::string said((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.exit_code, 1) << said;
  EXPECT_TRUE(contains(said, "glassbox: standard output: writing failed: Broken pipe; the run stops")) << said;
}

TEST(CliTrain, ALossThatIsNotFiniteStopsTheRunWithExitOne) {
  testing::TempDir dir;
  const testing::CommandOutcome r =
      glassbox("train LeNet --data synthetic:256 --batch 32 --lr 100000 --schedule constant --device cpu --workers 1 "
               "--checkpoint-dir " + dir.file("run"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("glassbox: epoch 1, step [0-9]+: the loss is (nan|inf)")))
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run/latest"))) << "a checkpoint of a broken epoch was written";
}

TEST(CliTrain, UsageErrorsNameTheFlagAndExitTwo) {
  testing::TempDir dir;
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"train LeNet", "glassbox: train needs --data SPEC: fashion-mnist, fashion-mnist:DIR, mnist:DIR, folder:PATH or "
                      "synthetic[:N]"},
      {"train LeNet --data imagenet", "unknown"},
      {"train LeNet --data synthetic --schedule linear", "--schedule: unknown schedule 'linear'"},
      {"train LeNet --data synthetic --lr -1", "--lr must be a number from"},
      {"train LeNet --data synthetic --log-every 5", "glassbox: --log-every needs --log FILE"},
      {"train LeNet --data synthetic --epochs 2 --warmup-epochs 2",
       "glassbox: --warmup-epochs 2 leaves none of the 2 epochs for the schedule; give fewer warm-up epochs"},
      {"train LeNet --data synthetic --resume " + dir.file("none"), dir.file("none")},
      {"train LeNet --data synthetic --strict-resume", "glassbox: --strict-resume needs --resume DIR"},
      {"train LeNet --data synthetic --overwrite", "glassbox: --overwrite needs --checkpoint-dir DIR"},
      {"train AlexNet --data fashion-mnist", "(1, 28, 28)"},
      {"eval LeNet --data synthetic", "glassbox: eval needs --weights FILE (a model file)"},
      {"eval LeNet --weights w", "glassbox: eval needs one of --data SPEC (score a test set) or --input FILE"},
      {"eval LeNet --weights w --data synthetic --input x", "glassbox: eval needs one of --data SPEC"},
      {"eval LeNet --weights w --data synthetic --logits x",
       "glassbox: --logits goes with --input FILE: it writes the logits of those images"},
      {"eval LeNet --weights w --input x --logits w",
       "glassbox: --logits w is also the --weights file: writing the logits would replace it; give another path"},
      {"eval LeNet --weights w --input x --logits ./x",
       "glassbox: --logits ./x is also the --input file: writing the logits would replace it; give another path"},
  };
  for (const auto& c : cases) {
    const testing::CommandOutcome r = glassbox(c.args + " --device cpu");
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << "\n" << r.output;
    if (!contains(c.args, "--resume")) {
      EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    }
  }
}

TEST(CliTrain, ALogThatCannotBeWrittenIsAFailure) {
  testing::TempDir dir;
  const std::string args = "train LeNet --data synthetic:64 --batch 32 --epochs 1 --device cpu --workers 1 --log ";
  testing::CommandOutcome r = glassbox(args + dir.file("missing/log.jsonl"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --log " + dir.file("missing/log.jsonl") +
                                     ": cannot open for appending: No such file or directory"))
      << r.output;
  r = glassbox(args + "/dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --log /dev/full: write failed: No space left on device")) << r.output;
}

// A run killed in the middle of a log line: the next run starts on a line of its own.
TEST(CliTrain, ALogLineLeftUnfinishedIsEndedBeforeTheNextRunWrites) {
  testing::TempDir dir;
  const std::string log = dir.file("log.jsonl");
  std::ofstream(log) << "{\"event\":\"start\"}\n{\"event\":\"epo";
  const testing::CommandOutcome r =
      glassbox("train LeNet --data synthetic:64 --batch 32 --epochs 1 --device cpu --workers 1 --log " + log);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream file(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[1], "{\"event\":\"epo");
  EXPECT_TRUE(lines[2].starts_with("{\"batch\":")) << lines[2];
  EXPECT_TRUE(contains(lines[2], "\"event\":\"start\"")) << lines[2];
}

TEST(CliTrain, EvalInputMustHoldImagesOfTheNetworksShape) {
  testing::TempDir dir;
  SafetensorsFile file;
  file.tensors.push_back({.name = "pixels", .dtype = "F32", .shape = {1}, .bytes = std::vector<std::byte>(4)});
  write_safetensors(dir.file("no_images.safetensors"), file);
  file.tensors[0] = {.name = "images", .dtype = "F32", .shape = {2, 3, 28, 28},
                     .bytes = std::vector<std::byte>(2 * 3 * 28 * 28 * 4)};
  write_safetensors(dir.file("rgb.safetensors"), file);
  testing::CommandOutcome r =
      glassbox("eval LeNet --weights w --input " + dir.file("no_images.safetensors") + " --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "no_images.safetensors: no tensor named \"images\"")) << r.output;
  r = glassbox("eval LeNet --weights w --input " + dir.file("rgb.safetensors") + " --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "rgb.safetensors: \"images\" is F32 (2, 3, 28, 28); LeNet takes F32 (N, 1, 28, 28)"))
      << r.output;
}

}  // namespace
}  // namespace glassbox
