// tests/mpi/test_communicator_mpi.cpp: the MPI communicator across processes.
// Each test runs `mpirun -np 2 communicator_driver <case>`
// (tests/mpi/communicator_driver.cpp) as a user would, and checks the exit
// code, what was printed and how long the job took: a rank that hangs the job
// fails here by its bound, long before CTest's timeout.
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

// MPIRUN_COMMAND: mpirun with its flags (tests/mpi/CMakeLists.txt says why each).
Job run_job(const std::string& which) {
  const auto start = std::chrono::steady_clock::now();
  // timeout(1): a job that hangs still ends, and fails the checks below.
  Job job{run_command(std::string("timeout -k 5 60 ") + MPIRUN_COMMAND + " " + COMMUNICATOR_DRIVER_PATH + " " +
                      which)};
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return job;
}

TEST(MpiCommunicator, AverageIsExactForEverySizeWithReductionsInFlightTogether) {
  const Job job = run_job("average");
  EXPECT_EQ(job.outcome.exit_code, 0) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "rank 0 of 2 (mpi): average ok")) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "rank 1 of 2 (mpi): average ok")) << job.outcome.output;
}

TEST(MpiCommunicator, BroadcastAndAllGather) {
  const Job job = run_job("collectives");
  EXPECT_EQ(job.outcome.exit_code, 0) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "rank 0 of 2: collectives ok")) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "rank 1 of 2: collectives ok")) << job.outcome.output;
}

// Rank 1 never starts the reduction (it sleeps 60 s); rank 0's deadline is 2 s.
TEST(MpiCommunicator, TimeoutNamesRankAndReductionThenEndsTheJob) {
  const Job job = run_job("timeout");
  EXPECT_EQ(job.outcome.exit_code, 1) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output,
                       "communicator_driver: rank 0 of 2: all-reduce of 25.00 MiB (reduction 0 of this step) did "
                       "not finish within 2 s; another rank may have exited or hung"))
      << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output,
                       "after the timeout: rank 0 of 2: the MPI communicator failed earlier (a timeout or an MPI "
                       "error); the job cannot go on"))
      << job.outcome.output;
  EXPECT_LT(job.seconds, 20.0) << "abort_job did not end rank 1's sleep";
}

TEST(MpiCommunicator, SetUpCollectivesHaveTheDeadlineToo) {
  const Job job = run_job("setup-timeout");
  EXPECT_EQ(job.outcome.exit_code, 1) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output,
                       "communicator_driver: rank 0 of 2: broadcast of 3.91 KiB from rank 1 did not finish within "
                       "2 s; another rank may have exited or hung"))
      << job.outcome.output;
  EXPECT_LT(job.seconds, 20.0) << job.outcome.output;
}

// Rank 0 in an all_gather, rank 1 in an all-reduce: each times out naming
// its own collective (under ASan, before the set-up messages had their own
// MPI communicator, the bucket landed in the gather's 8-byte buffer).
TEST(MpiCommunicator, RanksInDifferentCollectivesTimeOutInsteadOfExchangingData) {
  const Job job = run_job("mismatched-collectives");
  EXPECT_EQ(job.outcome.exit_code, 1) << job.outcome.output;
  EXPECT_TRUE(contains(job.outcome.output, "did not finish within 2 s; another rank may have exited or hung"))
      << job.outcome.output;
  EXPECT_FALSE(contains(job.outcome.output, "invalid pointer")) << job.outcome.output;
  EXPECT_LT(job.seconds, 20.0) << job.outcome.output;
}

// The launcher's environment says rank 1 of 2, but the process was started
// alone: MPI's world has one rank, and the communicator refuses to guess.
TEST(MpiCommunicator, EnvironmentDisagreeingWithMpiIsAConfigError) {
  const CommandOutcome outcome =
      run_command(std::string("OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 timeout -k 5 60 ") +
                  COMMUNICATOR_DRIVER_PATH + " average");
  EXPECT_EQ(outcome.exit_code, 2) << outcome.output;
  EXPECT_TRUE(contains(outcome.output, "MPI says this is rank 0 of 1, the launcher's environment rank 1 of 2: "
                                       "started by a different launcher?"))
      << outcome.output;
}

// Rank 1 exits with code 3 before starting the reduction rank 0 waits for.
TEST(MpiCommunicator, RankExitingEarlyEndsTheJob) {
  const Job job = run_job("exit-early");
  EXPECT_NE(job.outcome.exit_code, 0) << job.outcome.output;
  EXPECT_LT(job.seconds, 20.0) << job.outcome.output;
}

}  // namespace
}  // namespace glassbox::testing
