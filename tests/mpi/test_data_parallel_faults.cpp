// tests/mpi/test_data_parallel_faults.cpp: a rank that dies or hangs in the
// middle of a data-parallel step ends the job with a non-zero exit code and
// never leaves the other rank waiting: `mpirun -np 2 data_parallel_check
// exit-mid-step | hang-mid-step` (tests/mpi/data_parallel_check.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/support/command.h"
#include "tests/support/temp_dir.h"

namespace glassbox::testing {
namespace {

struct Job {
  CommandOutcome outcome;
  double seconds = 0.0;
};

Job run_job(const std::string& fault) {
  const auto start = std::chrono::steady_clock::now();
  // timeout(1): a job that hangs still ends, and fails the checks below.
  Job job{run_command(std::string("timeout -k 5 90 ") + MPIRUN_COMMAND + " " + DATA_PARALLEL_CHECK_PATH + " " +
                      fault)};
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return job;
}

// Rank 1 exits with code 3 after the forward of step 2: mpirun ends rank 0
// and passes the code on.
TEST(DataParallelFaults, ARankThatExitsMidStepEndsTheJob) {
  const Job job = run_job("exit-mid-step");
  EXPECT_NE(job.outcome.exit_code, 0) << job.outcome.output;
  EXPECT_NE(job.outcome.exit_code, 124) << "the job hung until timeout(1) ended it:\n" << job.outcome.output;
  EXPECT_LT(job.seconds, 30.0) << job.outcome.output;
}

// Rank 1 hangs after the forward of step 2: rank 0's all-reduce passes its
// 2 s deadline, rank 0 names itself and the reduction, and abort_job ends
// rank 1's sleep.
TEST(DataParallelFaults, ARankThatHangsMidStepIsNamedAndTheJobEnds) {
  const Job job = run_job("hang-mid-step");
  EXPECT_EQ(job.outcome.exit_code, 1) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "data_parallel_check: rank 0 of 2: all-reduce of ")) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "did not finish within 2 s; another rank may have exited or hung"))
      << job.outcome.output;
  EXPECT_LT(job.seconds, 30.0) << "abort_job did not end rank 1's sleep:\n" << job.outcome.output;
}

// Ranks started with different settings (mpirun's MPMD form, `A : B`) are
// refused at start-up, every rank naming the setting and each rank's value.
// Without the check, different --data sizes gave the ranks different step
// counts, and rank 1's gradients were written into another collective's buffer.
TEST(DataParallelFaults, RanksWithDifferentSettingsAreRefusedAtStartUp) {
  const std::string train = std::string(GLASSBOX_CLI_PATH) + " train LeNet --device cpu --epochs 1 --batch 16 ";
  TempDir dir;
  const std::string log = dir.file("run.jsonl"), checkpoints = dir.file("run");
  struct Case {
    std::string rank0, rank1, expected;
  };
  for (const Case& c :
       {Case{"--data synthetic:256", "--data synthetic:512",
             "ranks disagree on --data: rank 0 has synthetic:256; rank 1 has synthetic:512 (every rank must train "
             "with the same settings)"},
        Case{"--data synthetic:256 --bucket-mb 1", "--data synthetic:256 --bucket-mb 2",
             "ranks disagree on --bucket-mb: rank 0 has 1; rank 1 has 2"},
        Case{"--data synthetic:256 --lr 0.1", "--data synthetic:256 --lr 0.2",
             "ranks disagree on --lr: rank 0 has 0.1; rank 1 has 0.2"},
        // What only rank 0 writes: another rank's would be ignored in silence,
        // and rank 0 writes nothing of a refused job.
        Case{"--data synthetic:256", "--data synthetic:256 --log " + log,
             "ranks disagree on --log: rank 0 has not given; rank 1 has " + log},
        Case{"--data synthetic:256 --log " + log, "--data synthetic:256",
             "ranks disagree on --log: rank 0 has " + log + "; rank 1 has not given"},
        Case{"--data synthetic:256", "--data synthetic:256 --checkpoint-dir " + checkpoints,
             "ranks disagree on --checkpoint-dir: rank 0 has not given; rank 1 has " + checkpoints}}) {
    const auto start = std::chrono::steady_clock::now();
    const CommandOutcome outcome = run_command("timeout -k 5 90 " + std::string(MPI_LAUNCHER) + " -np 1 " + train +
                                               c.rank0 + " : -np 1 " + train + c.rank1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(outcome.exit_code, 0) << outcome.output;
    EXPECT_NE(outcome.exit_code, 124) << "the job hung until timeout(1) ended it:\n" << outcome.output;
    EXPECT_TRUE(contains(outcome.output, c.expected)) << c.expected << "\n" << outcome.output;
    EXPECT_LT(seconds, 60.0) << outcome.output;
  }
  EXPECT_FALSE(std::filesystem::exists(log));
  EXPECT_FALSE(std::filesystem::exists(checkpoints));
}

// `glassbox time` under mpirun runs data-parallel steps too: ranks that
// would take other steps (another count, bucket size or precision) or time
// another network are refused before the first step, naming the setting.
TEST(DataParallelFaults, TimeRanksWithDifferentSettingsAreRefusedBeforeAStep) {
  const std::string time = std::string(GLASSBOX_CLI_PATH) + " time MLP:100,16,7 --device cpu --batch 4 ";
  TempDir dir;
  const std::string json = dir.file("time.json");
  struct Case {
    std::string rank0, rank1, expected;
  };
  for (const Case& c :
       {Case{"--steps 1", "--steps 2", "ranks disagree on --steps: rank 0 has 1; rank 1 has 2 (every rank must train "
                                       "with the same settings)"},
        Case{"--steps 1 --bucket-mb 1", "--steps 1", "ranks disagree on --bucket-mb: rank 0 has 1; rank 1 has not "
                                                     "given"},
        Case{"--steps 1 --precision bf16", "--steps 1", "ranks disagree on --precision: rank 0 has bf16; rank 1 has "
                                                        "not given"},
        Case{"--steps 1", "--steps 1 --json " + json, "ranks disagree on --json: rank 0 has not given; rank 1 has " +
                                                          json}}) {
    const CommandOutcome outcome = run_command("timeout -k 5 90 " + std::string(MPI_LAUNCHER) + " -np 1 " + time +
                                               c.rank0 + " : -np 1 " + time + c.rank1);
    EXPECT_NE(outcome.exit_code, 0) << outcome.output;
    EXPECT_NE(outcome.exit_code, 124) << "the job hung until timeout(1) ended it:\n" << outcome.output;
    EXPECT_TRUE(contains(outcome.output, c.expected)) << c.expected << "\n" << outcome.output;
    EXPECT_FALSE(contains(outcome.output, "data-parallel: 2 ranks")) << "it timed:\n" << outcome.output;
  }
  const std::string other = std::string(GLASSBOX_CLI_PATH) + " time MLP:100,32,7 --device cpu --batch 4 --steps 1";
  const CommandOutcome outcome =
      run_command("timeout -k 5 90 " + std::string(MPI_LAUNCHER) + " -np 1 " + time + "--steps 1 : -np 1 " + other);
  EXPECT_TRUE(contains(outcome.output, "ranks disagree on the network: rank 0 has MLP:100,16,7; rank 1 has "
                                       "MLP:100,32,7"))
      << outcome.output;
}

// Every rank gets the same words; one help is printed, not one per rank.
TEST(DataParallelFaults, HelpUnderMpirunIsPrintedOnce) {
  for (const std::string words : {" train --help", " --help"}) {
    const CommandOutcome outcome =
        run_command("timeout -k 5 90 " + std::string(MPI_LAUNCHER) + " -np 2 " + GLASSBOX_CLI_PATH + words);
    EXPECT_EQ(outcome.exit_code, 0) << words << "\n" << outcome.output;
    const size_t first = outcome.output.find("usage: glassbox");
    EXPECT_NE(first, std::string::npos) << words << "\n" << outcome.output;
    EXPECT_EQ(outcome.output.find("usage: glassbox", first + 1), std::string::npos) << words << "\n" << outcome.output;
  }
}

#ifdef BENCH_NETS_PATH
// bench_nets under mpirun: ranks given other benchmarks (another batch
// here, which would report a global batch that is not one) are refused
// before any benchmark runs, naming both command lines.
TEST(DataParallelFaults, BenchNetsRanksWithOtherBenchmarksAreRefused) {
  const std::string bench = std::string(BENCH_NETS_PATH) +
                            " --device=cpu --net=MLP:100,16,7 --benchmark_filter=train_step --steps=1 --warmup=0 ";
  const CommandOutcome outcome = run_command("timeout -k 5 90 " + std::string(MPI_LAUNCHER) + " -np 1 " + bench +
                                             "--batch=4 : -np 1 " + bench + "--batch=8");
  EXPECT_NE(outcome.exit_code, 0) << outcome.output;
  EXPECT_NE(outcome.exit_code, 124) << "the job hung until timeout(1) ended it:\n" << outcome.output;
  EXPECT_TRUE(contains(outcome.output, "ranks disagree on the benchmarks: rank 0 has --batch=4 "
                                       "--benchmark_filter=train_step --net=MLP:100,16,7 --steps=1 --warmup=0; rank 1 "
                                       "has --batch=8 --benchmark_filter=train_step"))
      << outcome.output;
  EXPECT_FALSE(contains(outcome.output, "ranks:2")) << "it timed:\n" << outcome.output;
}
#endif

}  // namespace
}  // namespace glassbox::testing
