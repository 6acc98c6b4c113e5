// tests/test_communicator.cpp: what one process can check of optim/communicator.h:
// where the launcher's environment puts it, the communicator of a job of one,
// and the errors of both. The multi-rank tests run under mpirun (tests/mpi/).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "optim/communicator.h"
#include "optim/communicator_backends.h"
#include "tests/support/strings.h"

namespace glassbox {
namespace {

using communicator_backends::parse_job_placement;
using testing::contains;

JobPlacement placement_of(const std::map<std::string, std::string>& variables) {
  return parse_job_placement([&](const char* name) -> const char* {
    const auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  });
}

std::string error_of(const std::map<std::string, std::string>& variables) {
  try {
    placement_of(variables);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JobPlacement, NoLauncherIsAJobOfOne) {
  const JobPlacement p = placement_of({{"HOME", "/root"}});
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.size, 1);
  EXPECT_EQ(p.local_rank, 0);
  EXPECT_EQ(p.local_size, 1);
  EXPECT_FALSE(p.launched_by_mpi);
}

TEST(JobPlacement, ReadsOpenMpiBeforePmi) {
  const JobPlacement p = placement_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                       {"PMI_RANK", "0"}, {"PMI_SIZE", "1"}});
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.size, 4);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.local_size, 2);
  EXPECT_TRUE(p.launched_by_mpi);
}

TEST(JobPlacement, PmiWithoutLocalVariablesIsOneMachine) {
  const JobPlacement p = placement_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}});
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.size, 3);
  EXPECT_EQ(p.local_rank, 2);
  EXPECT_EQ(p.local_size, 3);
  const JobPlacement pmix = placement_of({{"PMIX_RANK", "1"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(pmix.rank, 1);
  EXPECT_EQ(pmix.size, 2);
}

TEST(JobPlacement, MalformedValuesAreConfigErrorsNamingTheVariable) {
  for (const char* bad : {"", "x", "1x", "-1", " 1", "99999999999"}) {
    EXPECT_TRUE(contains(error_of({{"OMPI_COMM_WORLD_RANK", bad}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                         cat("environment variable OMPI_COMM_WORLD_RANK='", bad, "' is not a rank")))
        << bad;
  }
  EXPECT_TRUE(contains(error_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}}),
                       "OMPI_COMM_WORLD_SIZE='0' is not a job size: expected an integer from 1 to"));
  EXPECT_TRUE(contains(error_of({{"PMI_RANK", "1"}}),
                       "environment variable PMI_RANK is set (1) but PMI_SIZE is not"));
  EXPECT_TRUE(contains(error_of({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                       "OMPI_COMM_WORLD_RANK=2 is not a rank of a job of 2 (OMPI_COMM_WORLD_SIZE)"));
  EXPECT_TRUE(contains(error_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
                       "OMPI_COMM_WORLD_LOCAL_SIZE is set (2) but OMPI_COMM_WORLD_LOCAL_RANK is not"));
  EXPECT_TRUE(contains(error_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
                       "OMPI_COMM_WORLD_LOCAL_RANK='2' is not a local rank: expected an integer from 0 to 1"));
}

// CTest runs this without mpirun: a job of one, on the CPU.
TEST(SingleCommunicator, AveragesNothingAndRecordsEachReduction) {
  Context ctx = Context::cpu();
  const auto comm = make_communicator(ctx);
  EXPECT_EQ(comm->backend(), "single");
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  Tensor a = ctx.allocate(Shape{5}, DType::kFloat32, MemoryCategory::kGradients);
  Tensor b = ctx.allocate(Shape{3, 7}, DType::kFloat32, MemoryCategory::kGradients);
  for (int i = 0; i < 5; ++i) a.data<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (int i = 0; i < 21; ++i) b.data<float>()[i] = 3.0f - 0.5f * static_cast<float>(i);
  comm->begin_step(ctx);
  comm->start_average(ctx, a);
  comm->progress();
  comm->start_average(ctx, b);
  comm->wait_all(ctx);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.data<float>()[i], 0.25f * static_cast<float>(i) - 1.0f);
  for (int i = 0; i < 21; ++i) EXPECT_EQ(b.data<float>()[i], 3.0f - 0.5f * static_cast<float>(i));
  const std::vector<ReductionTime> times = comm->last_times();
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].bytes, 20u);
  EXPECT_EQ(times[1].bytes, 84u);
  EXPECT_LE(times[0].ready_ms, times[1].ready_ms);
  EXPECT_EQ(times[1].done_ms, times[1].ready_ms);
  comm->begin_step(ctx);
  EXPECT_TRUE(comm->last_times().empty());

  comm->broadcast(ctx, a, 0);  // from the only rank: every value stays
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.data<float>()[i], 0.25f * static_cast<float>(i) - 1.0f);
  EXPECT_EQ(comm->all_gather("mine"), std::vector<std::string>{"mine"});
}

TEST(SingleCommunicator, ErrorsNameTheOperation) {
  Context ctx = Context::cpu();
  const auto comm = make_communicator(ctx);
  Tensor ints = ctx.allocate(Shape{4}, DType::kInt32, MemoryCategory::kActivations);
  try {
    comm->start_average(ctx, ints);
    FAIL() << "int32 data was averaged";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "all-reduce: averages float32 data, not int32 (4 elements)")) << e.what();
  }
  try {
    comm->broadcast(ctx, ints, 1);
    FAIL() << "root 1 of a job of one";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "rank 0 of 1: broadcast from root 1, which is not a rank of this job")) << e.what();
  }
}

TEST(Communicator, TimeoutMustBePositive) {
  Context ctx = Context::cpu();
  try {
    make_communicator(ctx, {.timeout_seconds = 0.0});
    FAIL() << "a zero timeout was accepted";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "communicator timeout must be positive seconds, not 0")) << e.what();
  }
}

TEST(Communicator, AMultiRankJobWithoutMpiSaysWhatToInstall) {
  try {
    communicator_backends::throw_built_without_mpi(4);
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "this job has 4 ranks (mpirun), but Glassbox was built without MPI; "
                           "install libopenmpi-dev and rebuild");
  }
}

TEST(Communicator, AbortJobWithoutMpiExitsWithTheCode) {
  EXPECT_EXIT(abort_job(7), ::testing::ExitedWithCode(7), "");
}

}  // namespace
}  // namespace glassbox
