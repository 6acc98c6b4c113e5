// tests/mpi/test_data_parallel_faults.cpp: a rank that dies or hangs in the
// middle of a data-parallel step ends the job with a non-zero exit code and
// never leaves the other rank waiting: `mpirun -np 2 data_parallel_check
// exit-mid-step | hang-mid-step` (tests/mpi/data_parallel_check.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/support/command.h"

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

}  // namespace
}  // namespace glassbox::testing
