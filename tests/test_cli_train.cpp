// tests/test_cli_train.cpp: `glassbox train` and `glassbox eval` run as a
// user runs them: what they print and write, resuming, and every usage error.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "nets/registry.h"
#include "tensor/context.h"
#include "tensor/safetensors.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"
#include "tests/support/temp_dir.h"
#include "train/checkpoint.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::contains_match;
using testing::run_command;

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

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
  EXPECT_TRUE(contains_match(r.output, "\n  2/2 +[0-9.]+ +[0-9.]+% +[0-9.]+ +[0-9.]+%")) << r.output;
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
  EXPECT_TRUE(contains_match(r.output, "\n  3/3 ")) << r.output;
  EXPECT_FALSE(contains_match(r.output, "\n  2/3 ")) << r.output;
  EXPECT_EQ(count_lines(log, "\"event\":\"epoch\""), 3);
  EXPECT_TRUE(std::filesystem::exists(run + "/epoch-0003.safetensors"));

  // Another setting than the checkpoint's is refused, naming both.
  r = glassbox("train LeNet --resume " + run + " --epochs 4 --lr 0.1 --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "this run's lr is '0.1', the checkpoint's is '0.05'")) << r.output;
  // --epochs may grow, not shrink.
  r = glassbox("train LeNet --resume " + run + " --epochs 2 --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "this run's epochs is 2, fewer than the 3 the checkpoint's run asked for; --epochs "
                                 "may only grow on a resume"))
      << r.output;
  r = glassbox("train AlexNet --resume " + run + " --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --resume " + run + ": the checkpoint is of LeNet, not AlexNet")) << r.output;

  // The trained model's accuracy, and its logits for given images.
  r = glassbox("eval LeNet --weights " + run + "/epoch-0003.safetensors --data synthetic:256 --batch 50 --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains_match(r.output, "accuracy: [0-9]+\\.[0-9]{2}% \\([0-9]+ of 256\\)")) << r.output;
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

// Rewrites a safetensors file through `edit`.
void edit_file(const std::string& path, const std::function<void(SafetensorsFile&)>& edit) {
  SafetensorsFile file = read_safetensors(path);
  edit(file);
  write_safetensors(path, file);
}

// A setting is saved as the shortest text that reads back as the same
// number: a resumed run trains with the very learning rate and momentum the
// run it continues did, and a value that differs only past the sixth digit
// is another setting. Integers and schedules are saved canonical too: the
// same value typed another way is the same setting.
TEST(CliTrain, SettingsAreSavedExactly) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  testing::CommandOutcome r = glassbox("train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 "
                                       "--epochs 1 --lr 0.0123456789 --momentum 0.987654321 --seed 007 "
                                       "--schedule step:30:0.10 --checkpoint-dir " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string resume = "train LeNet --resume " + run + " --device cpu --workers 1 ";
  r = glassbox(resume + "--epochs 2 --lr 0.0123456781");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "this run's lr is '0.0123456781', the checkpoint's is '0.0123456789'")) << r.output;
  r = glassbox(resume + "--epochs 2 --lr 0.01234567890 --momentum 0.987654321");  // the same numbers
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = glassbox(resume + "--epochs 3 --seed 7 --batch 016 --schedule step:030:0.1");  // the same settings
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "step:30:0.1 schedule")) << r.output;
  r = glassbox(resume + "--epochs 4 --schedule step:30:0.1000001");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "this run's schedule is 'step:30:0.1000001', the checkpoint's is 'step:30:0.1'"))
      << r.output;
  // A checkpoint whose texts are not canonical (saved before they were)
  // resumes with the same values typed canonically.
  edit_file(run + "/epoch-0003.train.safetensors", [](SafetensorsFile& f) {
    f.metadata["config.batch"] = "016";
    f.metadata["config.schedule"] = "step:30:0.10";
  });
  r = glassbox(resume + "--epochs 4 --batch 16 --schedule step:30:0.1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
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
  EXPECT_TRUE(std::filesystem::exists(run + "/.lock")) << "--overwrite removed the directory's lock file";
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

// The compile flags that choose kernels are part of what a resume compares:
// a run trained with --no-winograd and resumed without it is told so, by
// the flags, and --strict-resume refuses it.
TEST(CliTrain, AResumeWithOtherCompileFlagsNamesThem) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  testing::CommandOutcome r = glassbox("train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 "
                                       "--steps-per-epoch 2 --epochs 1 --threads 1 --no-winograd --checkpoint-dir " +
                                       run);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const std::string resume = "train LeNet --resume " + run + " --device cpu --workers 1 --threads 1 ";
  const std::string differs =
      "compile_flags is '--layout auto --cpu-conv auto', the checkpoint's '--layout auto --cpu-conv auto "
      "--no-winograd'";
  r = glassbox(resume + "--epochs 2 --strict-resume");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--strict-resume: " + differs)) << r.output;

  r = glassbox(resume + "--epochs 2 --no-winograd --strict-resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "not bit for bit")) << r.output;

  r = glassbox(resume + "--epochs 3 --no-fusion");  // epochs 1 and 2 ran with --no-winograd
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "compile_flags is '--layout auto --cpu-conv auto --no-fusion', the checkpoint's "
                                 "'--layout auto --cpu-conv auto --no-winograd'; the run continues, but not bit for "
                                 "bit"))
      << r.output;
}

// A reader that goes away (`train ... | head -c 10`) stops the run at its
// next line with a message and exit code 1, not a silent SIGPIPE.
// The epoch whose row could not be printed has its checkpoint saved, and
// its log line written: `latest` never names an epoch the log lacks.
TEST(CliTrain, AClosedStdoutStopsTheRunWithAMessage) {
  testing::TempDir dir;
  const std::string errors = dir.file("stderr.txt");
  const testing::CommandOutcome r = run_command(
      "bash -c '" + kCli + " train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 --epochs 50 "
      "--steps-per-epoch 2 --checkpoint-dir " + dir.file("run") + " --log " + dir.file("log.jsonl") + " 2>" + errors +
      " | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}'");
  std::ifstream file(errors);
  const std::string said((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.exit_code, 1) << said;
  EXPECT_TRUE(contains(said, "glassbox: standard output: writing failed: Broken pipe; the run stops")) << said;
  const int saved = read_training_state(dir.file("run")).epoch;
  std::ifstream log(dir.file("log.jsonl"));
  int logged = 0;
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json event = nlohmann::json::parse(line);
    if (event.at("event") == "epoch") logged = event.at("epoch").get<int>();
  }
  EXPECT_EQ(logged, saved) << "the last epoch logged and the last saved";
}

TEST(CliTrain, ALossThatIsNotFiniteStopsTheRunWithExitOne) {
  testing::TempDir dir;
  const testing::CommandOutcome r =
      glassbox("train LeNet --data synthetic:256 --batch 32 --lr 100000 --schedule constant --device cpu --workers 1 "
               "--checkpoint-dir " + dir.file("run"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains_match(r.output, "glassbox: epoch 1, step [0-9]+: the loss is (nan|inf)"))
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run/latest"))) << "a checkpoint of a broken epoch was written";
}

// fp16 on the command line: the epoch's row shows the loss scale, the
// header the precision (docs/precision.md).
TEST(CliTrain, AnFp16RunShowsItsLossScale) {
  const testing::CommandOutcome r = glassbox(
      "train LeNet --device cpu --data synthetic:256 --epochs 1 --batch 32 --precision fp16 --loss-scale-init 1024 "
      "--loss-scale-growth-interval 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, std::string(name_of(Precision::kFp16)))) << r.output;
  EXPECT_TRUE(contains(r.output, "(loss scale 4096)")) << r.output;  // 8 clean steps: doubled at the 3rd and the 6th
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
      {"train LeNet --data synthetic --loss-scale-init 8",
       "glassbox: --loss-scale-init is for --precision fp16 (loss scaling); this run is fp32"},
      {"train LeNet --data synthetic --precision fp16 --loss-scale-growth-interval 0",
       "--loss-scale-growth-interval must be an integer from 1 to"},
      {"train AlexNet --data fashion-mnist", "(1, 28, 28)"},
      {"eval LeNet --data synthetic", "glassbox: eval needs --weights FILE (a model file)"},
      {"eval LeNet --weights w", "glassbox: eval needs one of --data SPEC (score a test set) or --input FILE"},
      {"eval LeNet --weights w --data synthetic --input x", "glassbox: eval needs only one of --data SPEC"},
      {"eval LeNet --weights w --input x --batch 2",
       "glassbox: --batch goes with --data SPEC: --input FILE is scored as one batch of all its images"},
      {"eval LeNet --weights w --input x --workers 2", "glassbox: --workers goes with --data SPEC"},
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

// Note [A closed standard stream] (tools/entry_point.h): started without a
// stdout, the run must not print its table into the next file it opens.
TEST(CliTrain, AClosedStdoutNeverLandsInTheLog) {
  testing::TempDir dir;
  const std::string log = dir.file("log.jsonl");
  const testing::CommandOutcome r =
      run_command("bash -c \"exec 1>&-; exec " + kCli + " train LeNet --data synthetic:64 --batch 32 --epochs 1 "
                  "--device cpu --workers 1 --log " + log + "\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "Bad file descriptor")) << r.output;
  std::ifstream in(log);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_TRUE(line.starts_with("{") && line.ends_with("}")) << "not a JSON line in the log: " << line;
    ++lines;
  }
  EXPECT_GE(lines, 1) << "the log's first line";
}

TEST(CliTrain, ALogThatCannotBeWrittenIsAFailure) {
  testing::TempDir dir;
  const std::string args = "train LeNet --data synthetic:64 --batch 32 --epochs 1 --device cpu --workers 1 --log ";
  testing::CommandOutcome r = glassbox(args + dir.file("missing/log.jsonl"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --log " + dir.file("missing/log.jsonl") +
                                     ": cannot open for appending: No such file or directory"))
      << r.output;
  // A write that fails: the log is at the file size limit (ulimit -f, in
  // KiB), and SIGXFSZ is ignored, so that write() fails with EFBIG.
  // One log line of `size` bytes (a log's file begins as a log line does).
  auto log_line = [](size_t size) { return "{\"pad\":\"" + std::string(size - 10, ' ') + "\"}"; };
  const std::string full = dir.file("full.jsonl");
  std::ofstream(full) << log_line(65535) << '\n';
  r = run_command("bash -c \"trap '' XFSZ; ulimit -f 64; exec " + kCli + " " + args + full + "\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --log " + full + ": write failed: File too large")) << r.output;
  // Room for 10 bytes of the first line: they are cut off again, and the
  // file ends where it did, with a whole line.
  const std::string nearly = dir.file("nearly.jsonl");
  std::ofstream(nearly) << log_line(65535 - 10) << '\n';
  r = run_command("bash -c \"trap '' XFSZ; ulimit -f 64; exec " + kCli + " " + args + nearly + "\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --log " + nearly + ": write failed: File too large")) << r.output;
  EXPECT_EQ(testing::read_whole_file(nearly), log_line(65535 - 10) + "\n") << "half a line was left";
}

// --log is a regular file, or a new one: a named pipe would block the run
// once it filled, a device would be written to. Either is refused before
// training, naming what it is (exit 2).
TEST(CliTrain, ALogThatIsNotARegularFileIsRefused) {
  testing::TempDir dir;
  const std::string fifo = dir.file("log.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << fifo;
  const std::string args = "train LeNet --data synthetic:64 --batch 32 --epochs 1 --device cpu --workers 1 --log ";
  const struct {
    std::string path, what;
  } cases[] = {{fifo, "a named pipe"}, {"/dev/null", "a character device"}, {dir.path(), "a directory"}};
  for (const auto& c : cases) {
    const testing::CommandOutcome r = glassbox(args + c.path);
    EXPECT_EQ(r.exit_code, 2) << c.path << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: --log " + c.path + " is " + c.what +
                                       ", not a regular file: the log is a file that lines are appended to"))
        << r.output;
    EXPECT_FALSE(contains(r.output, " step 1/")) << "it trained\n" << r.output;
  }
}

// --log appends to a log: a file that is no log (a checkpoint, `latest`) is
// refused before it is touched, and a log named as a file the checkpoints
// write would be replaced by a save. Every refusal of the log comes before
// the checkpoint directory is claimed (or emptied) or anything trained.
TEST(CliTrain, ALogThatIsAnotherFileOrACheckpointsNameIsRefused) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  const std::string train = "train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 --steps-per-epoch 2 ";
  testing::CommandOutcome r = glassbox(train + "--epochs 1 --checkpoint-dir " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string weights = run + "/epoch-0001.safetensors";
  const auto size = std::filesystem::file_size(weights);
  // Outside the checkpoint directory: a checkpoint and a copy of `latest`.
  const std::string copy = dir.file("latest-copy");
  std::filesystem::copy_file(run + "/latest", copy);
  for (const std::string& log : {weights, copy}) {
    r = glassbox(train + "--epochs 1 --log " + log);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: --log " + log + " holds something other than a training log (a log's "
                                   "lines begin {\"): lines appended to it would damage it; give a new file, or "
                                   "the log of the run resumed")) << r.output;
    EXPECT_FALSE(contains(r.output, "1/1 ")) << "it trained\n" << r.output;
  }
  EXPECT_EQ(std::filesystem::file_size(weights), size) << "a refused log wrote into the checkpoint";
  EXPECT_EQ(testing::read_whole_file(copy), "epoch-0001\n");
  // In the directory a resume writes into, by name.
  r = glassbox(train + "--epochs 2 --resume " + run + " --log " + run + "/latest");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --log " + run + "/latest: the run's checkpoints write a file of that "
                                 "name into their directory " + run + ", and a save would replace the log"))
      << r.output;
  EXPECT_EQ(testing::read_whole_file(run + "/latest"), "epoch-0001\n");

  const std::string fresh = dir.file("fresh");
  for (const char* name : {"latest", "epoch-0002.safetensors", ".lock"}) {
    r = glassbox(train + "--epochs 2 --checkpoint-dir " + fresh + "/ --log " + fresh + "/" + name);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: --log " + fresh + "/" + name + ": the run's checkpoints write a file of "
                                   "that name into their directory " + fresh + "/, and a save would replace the "
                                   "log; give the log another name")) << r.output;
    EXPECT_FALSE(std::filesystem::exists(fresh)) << "a refused run made its checkpoint directory";
  }
  // The same directory named relatively and absolutely, before it exists.
  r = run_command("cd " + dir.path() + " && " + kCli + " " + train + "--epochs 2 --checkpoint-dir fresh --log " +
                  fresh + "/latest");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "the run's checkpoints write a file of that name into their directory fresh"))
      << r.output;
  r = glassbox(train + "--epochs 1 --checkpoint-dir " + fresh + " --log " + fresh + "/log.jsonl");
  EXPECT_EQ(r.exit_code, 0) << "a log of its own name beside the checkpoints\n" << r.output;

  // Every refusal of the log comes before --overwrite empties the directory
  // it would replace: a log that is no log, and one in a folder that is not there.
  const std::string kept = run + "/epoch-0001.safetensors";
  for (const std::string& log : {copy, dir.file("missing/log.jsonl")}) {
    r = glassbox(train + "--epochs 1 --checkpoint-dir " + run + " --overwrite --log " + log);
    EXPECT_NE(r.exit_code, 0) << log << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: --log " + log)) << r.output;
    EXPECT_TRUE(std::filesystem::exists(kept)) << "a refused run emptied its checkpoint directory";
  }
  // A log killed after its first byte is still a log.
  const std::string one_byte = dir.file("one-byte.jsonl");
  std::ofstream(one_byte) << "{";
  r = glassbox(train + "--epochs 1 --log " + one_byte);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A refused checkpoint directory is refused before the log is opened: a
// refused run writes nothing.
TEST(CliTrain, ARefusedCheckpointDirectoryLeavesNoLog) {
  testing::TempDir dir;
  const std::string file = dir.file("not-a-dir");
  std::ofstream(file) << "x";
  const std::string log = dir.file("log.jsonl");
  const testing::CommandOutcome r = glassbox("train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 "
                                             "--epochs 1 --checkpoint-dir " + file + " --log " + log);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot make the checkpoint directory '" + file + "'")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(log)) << "the refused run wrote its log";
  EXPECT_FALSE(contains(r.output, "SGD: lr")) << "the banner came before the refusal\n" << r.output;
}

// A test image that cannot be read is left out of the closing accuracy and
// counted beside it, in eval's words, and in the log's epoch line.
TEST(CliTrain, UnreadableTestImagesAreCountedInTheClosingLineAndTheLog) {
  testing::TempDir dir;
  const std::string data = dir.file("data"), log = dir.file("log.jsonl");
  testing::CommandOutcome r =
      glassbox("make-folder --synthetic --classes 2 --train 5 --val 5 --width 200 --height 150 --out " + data);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ofstream(data + "/val/class_0/2a.jpg") << "not a JPEG";  // among 10 good test images
  r = glassbox("train LeNet --data folder:" + data + " --epochs 1 --batch 5 --device cpu --workers 1 --log " + log);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains_match(r.output,
                             "\ntest accuracy after epoch 1: [0-9.]+% \\([0-9]+ of 10\\), 1 unreadable, not scored\n"))
      << r.output;
  EXPECT_EQ(count_lines(log, "\"event\":\"epoch\""), 1);
  EXPECT_EQ(count_lines(log, "\"skipped\":0,"), 1);
  EXPECT_EQ(count_lines(log, "\"test_unreadable\":1"), 1);
}

// At batch 1 an unreadable training image is a batch with no readable
// sample, which the loader passes over (Note [Skipped samples]): the epoch
// takes a step fewer, but its step count still ends where its batches do,
// so the run's own checkpoint resumes.
TEST(CliTrain, AnEpochWithABatchPassedOverStillEndsAtItsStepAndResumes) {
  testing::TempDir dir;
  const std::string data = dir.file("data"), run = dir.file("run");
  testing::CommandOutcome r =
      glassbox("make-folder --synthetic --classes 2 --train 5 --val 2 --width 28 --height 28 --out " + data);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ofstream(data + "/train/class_0/2a.jpg") << "not a JPEG";  // among 10 training images
  r = glassbox("train LeNet --data folder:" + data + " --batch 1 --epochs 1 --device cpu --workers 1 "
               "--checkpoint-dir " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = glassbox("train LeNet --resume " + run + " --epochs 2 --device cpu --workers 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains_match(r.output, "2 epochs of [0-9]+ steps, resumed after epoch 1")) << r.output;
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

// A resumed run is the run that stopped: its two files must be one run's
// (another run's train file, with its learning rate, is refused), every
// setting comes from the checkpoint, and a saved value that is missing or
// does not parse is the file's error, naming the field, not a flag's.
TEST(CliTrain, AResumedRunTakesEverySettingFromItsCheckpointOrRefusesIt) {
  testing::TempDir dir;
  const std::string run = dir.file("run"), other = dir.file("other");
  const std::string common = "train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 --steps-per-epoch 2 "
                             "--epochs 1 --checkpoint-dir ";
  testing::CommandOutcome r = glassbox(common + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = glassbox(common + other + " --lr 0.1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string model = run + "/epoch-0001.safetensors", train = run + "/epoch-0001.train.safetensors";
  const std::string kept = dir.file("kept.train.safetensors");
  std::filesystem::copy_file(train, kept);
  const std::string resume = "train LeNet --resume " + run + " --epochs 2 --device cpu --workers 1";

  std::filesystem::copy_file(other + "/epoch-0001.train.safetensors", train,
                             std::filesystem::copy_options::overwrite_existing);
  r = glassbox(resume);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: " + model + " and " + train +
                                     " are not one checkpoint: the model file's \"run_id\" is '"))
      << r.output;
  EXPECT_FALSE(contains(r.output, " step 1/")) << "it trained\n" << r.output;

  const struct {
    std::string key, value;  // "": erased
    std::string message;
  } cases[] = {
      {"config.seed", "", ": no \"config.seed\" in its __metadata__ (every setting of the run is saved with it)"},
      {"config.lr", "nan", ": __metadata__ \"config.lr\" must be a number from 1e-12 to 1000000, got 'nan'"},
      {"config.batch", "16x", ": __metadata__ \"config.batch\" must be an integer from 1 to 2147483647, got '16x'"},
      {"config.nesterov", "yes", ": __metadata__ \"config.nesterov\" must be true or false, got 'yes'"},
      {"config.precision", "fp8", ": __metadata__ \"config.precision\": unknown precision 'fp8'; valid: fp32, tf32, bf16, fp16"},
      {"config.schedule", "linear", ": __metadata__ \"config.schedule\": unknown schedule 'linear'"},
      {"config.data", "imagenet", ": __metadata__ \"config.data\": unknown data 'imagenet'; valid: "},
      {"config.data", "synthetic:abc", ": __metadata__ \"config.data\": synthetic:N must be an integer"},
      {"config.dropout", "0.5", ": __metadata__ \"config.dropout\" = '0.5' is not a setting of this fp32 run of "
                                "glassbox train, which cannot continue it as it started"},
      {"config.data", "folder:" + dir.file("gone"), ": __metadata__ \"config.data\": " + dir.file("gone")},
  };
  for (const auto& c : cases) {
    std::filesystem::copy_file(kept, train, std::filesystem::copy_options::overwrite_existing);
    edit_file(train, [&](SafetensorsFile& f) {
      if (c.value.empty()) {
        f.metadata.erase(c.key);
      } else {
        f.metadata[c.key] = c.value;
      }
    });
    r = glassbox(resume);
    EXPECT_EQ(r.exit_code, 1) << c.key << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: " + train + c.message)) << c.key << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "--")) << "a flag was blamed for the file\n" << r.output;
  }
  // The checkpoint's warm-up against its own epochs is the file's error;
  // against --epochs, the flag's.
  std::filesystem::copy_file(kept, train, std::filesystem::copy_options::overwrite_existing);
  edit_file(train, [&](SafetensorsFile& f) { f.metadata["config.warmup_epochs"] = "5"; });
  r = glassbox("train LeNet --resume " + run + " --device cpu --workers 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: " + train + ": __metadata__ \"config.warmup_epochs\" = 5 leaves none of "
                                 "its 1 epochs for the schedule")) << r.output;
  r = glassbox(resume);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --epochs 2 leaves no epoch for the schedule after the checkpoint's 5 "
                                 "warm-up epochs; a resume's epochs may only grow")) << r.output;

  // Another precision is named as that, not as fp16's loss-scaling
  // settings missing from the checkpoint.
  std::filesystem::copy_file(kept, train, std::filesystem::copy_options::overwrite_existing);
  r = glassbox(resume + " --precision fp16");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: --resume " + run + ": this run's precision is 'fp16', the checkpoint's is "
                                 "'fp32'; resume with the same settings"))
      << r.output;

  // The untouched checkpoint resumes, and keeps its run id.
  r = glassbox(resume);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_safetensors(run + "/epoch-0002.train.safetensors").metadata.at("run_id"),
            read_safetensors(kept).metadata.at("run_id"));
}

// While a run writes into a checkpoint directory (here this process holds
// its lock), another run is refused before it trains, naming the holder,
// with --overwrite too.
TEST(CliTrain, ARunIsRefusedADirectoryAnotherRunWritesInto) {
  testing::TempDir dir;
  const std::string run = dir.file("run");
  const std::string common = "train LeNet --data synthetic:64 --batch 16 --device cpu --workers 1 --steps-per-epoch 2 "
                             "--checkpoint-dir " + run;
  testing::CommandOutcome r = glassbox(common + " --epochs 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string in_use =
      cat("glassbox: --checkpoint-dir ", run, " is in use by another run (process ", getpid(), " holds its lock)");
  {
    const CheckpointDirLock held(run);
    for (const std::string& args : {common + " --epochs 1 --overwrite",
                                    "train LeNet --resume " + run + " --epochs 2 --device cpu --workers 1"}) {
      r = glassbox(args);
      EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, in_use)) << args << "\n" << r.output;
      EXPECT_FALSE(contains(r.output, " step 1/")) << "it trained\n" << r.output;
      EXPECT_TRUE(std::filesystem::exists(run + "/epoch-0001.safetensors")) << "a refused run removed a file";
    }
  }
  r = glassbox("train LeNet --resume " + run + " --epochs 2 --device cpu --workers 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// eval refuses weights that training cannot leave and pixels that are not
// finite, naming the file, the tensor and the element, instead of printing
// an accuracy of chance or a loss of nan.
TEST(CliTrain, EvalRefusesWeightsAndImagesThatAreNotFinite) {
  testing::TempDir dir;
  Context ctx = Context::cpu();
  const NetSpec lenet = find_net("LeNet");
  Graph graph = lenet.build(1);
  graph.compile(ctx, {.phase = Phase::kInference});
  const std::string good = dir.file("lenet.safetensors"), bad = dir.file("bad.safetensors");
  save_model(good, ctx, graph, lenet, 0);

  const struct {
    std::string tensor;
    int64_t element;
    float value;
    std::string message;
  } cases[] = {
      {"conv1.weight", 0, std::nanf(""), "conv1.weight[0, 0, 0, 0] is nan; a model or checkpoint file holds finite values"},
      {"conv2.bias", 1, INFINITY, "conv2.bias[1] is inf; a model or checkpoint file holds finite values"},
      {"fc3.weight", 0, 1e38f, "fc3.weight[0, 0] is 1e+38; fp32 training keeps weights and momentum within 1.8e19"},
  };
  for (const auto& c : cases) {
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    edit_file(bad, [&](SafetensorsFile& f) {
      HostTensor* t = nullptr;
      for (HostTensor& candidate : f.tensors) t = candidate.name == c.tensor ? &candidate : t;
      ASSERT_NE(t, nullptr) << c.tensor;
      std::memcpy(t->bytes.data() + c.element * 4, &c.value, 4);
    });
    const testing::CommandOutcome r = glassbox("eval LeNet --weights " + bad + " --data synthetic:64 --device cpu");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: " + bad + ": " + c.message)) << r.output;
    EXPECT_FALSE(contains(r.output, "accuracy:")) << r.output;
  }

  // (2, 1, 28, 28) images, one pixel not finite.
  for (const float pixel : {std::nanf(""), -INFINITY}) {
    HostTensor images{.name = "images", .dtype = "F32", .shape = {2, 1, 28, 28}};
    std::vector<float> values(2 * 28 * 28, 0.5f);
    values[28 * 28 + 3 * 28 + 5] = pixel;  // image 1, row 3, column 5
    images.bytes.resize(values.size() * sizeof(float));
    std::memcpy(images.bytes.data(), values.data(), images.bytes.size());
    write_safetensors(dir.file("images.safetensors"), {.tensors = {images}});
    const testing::CommandOutcome r =
        glassbox("eval LeNet --weights " + good + " --input " + dir.file("images.safetensors") + " --device cpu");
    EXPECT_EQ(r.exit_code, 1) << "a data failure, as for --weights: " << r.output;
    EXPECT_TRUE(contains(r.output, "glassbox: --input " + dir.file("images.safetensors") + ": images[1, 0, 3, 5] is " +
                                       (std::isnan(pixel) ? "nan" : "-inf") + "; eval takes finite pixels"))
        << r.output;
  }
}

// A Linux path is any bytes; safetensors metadata is UTF-8 text. A run that
// would save such a path in its checkpoints is refused before it trains; eval
// names such weights in the logits file escaped.
TEST(CliTrain, APathThatIsNotUtf8IsRefusedBeforeTrainingAndEscapedInLogits) {
  testing::TempDir dir;
  const std::string folder = dir.file("img\xff" "dir");
  testing::CommandOutcome r =
      glassbox("train LeNet --data folder:" + folder + " --checkpoint-dir " + dir.file("ckpt") + " --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "img\\xffdir' is not UTF-8 text from byte ")) << r.output;
  EXPECT_TRUE(contains(r.output, "a checkpoint saves every setting as UTF-8 text: rename the path, or train without "
                                 "--checkpoint-dir"))
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("ckpt"))) << "a refused run made its checkpoint directory";

  Context ctx = Context::cpu();
  const NetSpec lenet = find_net("LeNet");
  Graph graph = lenet.build(1);
  graph.compile(ctx, {.phase = Phase::kInference});
  const std::string weights = dir.file("w\xe9.safetensors");  // Latin-1 'é'
  save_model(weights, ctx, graph, lenet, 0);
  HostTensor images{.name = "images", .dtype = "F32", .shape = {1, 1, 28, 28}};
  images.bytes.resize(28 * 28 * sizeof(float));
  write_safetensors(dir.file("images.safetensors"), {.tensors = {images}});
  r = glassbox("eval LeNet --weights " + weights + " --input " + dir.file("images.safetensors") + " --logits " +
               dir.file("logits.safetensors") + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_safetensors(dir.file("logits.safetensors")).metadata.at("weights"), excerpt(weights, std::string::npos));
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
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "no_images.safetensors: no tensor named \"images\"")) << r.output;
  r = glassbox("eval LeNet --weights w --input " + dir.file("rgb.safetensors") + " --device cpu");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "rgb.safetensors: \"images\" is F32 (2, 3, 28, 28); LeNet takes F32 (N, 1, 28, 28)"))
      << r.output;
}

}  // namespace
}  // namespace glassbox
