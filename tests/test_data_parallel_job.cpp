// tests/test_data_parallel_job.cpp: how a rank of a data-parallel job picks
// its device and its share of the CPU cores (optim/data_parallel_job.h).
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <thread>

#include "optim/data_parallel_job.h"
#include "tensor/machine_load.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

JobPlacement placement(int rank, int size, int local_rank, int local_size) {
  return {.rank = rank, .size = size, .local_rank = local_rank, .local_size = local_size, .launched_by_mpi = true};
}

TEST(DataParallelJob, EachRankTakesTheGpuOfItsLocalRank) {
  EXPECT_EQ(device_for_rank(Device::cuda(0), "cuda", placement(3, 4, 3, 4), 4), Device::cuda(3));
  EXPECT_EQ(device_for_rank(Device::cuda(0), "", placement(5, 8, 1, 4), 4), Device::cuda(1));
  // A job of one, or the CPU: the device chosen.
  EXPECT_EQ(device_for_rank(Device::cuda(2), "cuda:2", placement(0, 1, 0, 1), 4), Device::cuda(2));
  EXPECT_EQ(device_for_rank(Device::cpu(), "cpu", placement(1, 2, 1, 2), 0), Device::cpu());
  // One rank per machine may still name its GPU, and runs on it.
  EXPECT_EQ(device_for_rank(Device::cuda(0), "cuda:0", placement(1, 2, 0, 1), 1), Device::cuda(0));
  EXPECT_EQ(device_for_rank(Device::cuda(1), "cuda:1", placement(1, 2, 0, 1), 2), Device::cuda(1));
}

// The NCCL communicator's check: a rank that shares its machine runs on its
// local rank's GPU; a rank alone on its machine (a job of one: `glassbox
// train --device cuda:1`) runs where it chose.
TEST(DataParallelJob, OnlyARankSharingItsMachineMustRunOnItsLocalRanksGpu) {
  EXPECT_EQ(rank_device_mismatch(placement(0, 1, 0, 1), 1, 4), "");
  EXPECT_EQ(rank_device_mismatch(placement(1, 2, 0, 1), 3, 4), "");
  EXPECT_EQ(rank_device_mismatch(placement(3, 4, 3, 4), 3, 4), "");
  EXPECT_EQ(rank_device_mismatch(placement(3, 4, 1, 2), 0, 4),
            "local rank 1 of 4 visible GPUs should run on cuda:1, but its context is on cuda:0");
}

TEST(DataParallelJob, NamingOneGpuForManyRanksOrTooFewGpusIsAConfigError) {
  EXPECT_EQ(testing::message_of<ConfigError>(
                [] { device_for_rank(Device::cuda(1), "cuda:1", placement(0, 2, 0, 2), 2); }),
            "--device cuda:1: in a job of 2 ranks, 2 on this machine, each rank takes the GPU of its local rank; "
            "give --device cuda");
  EXPECT_EQ(testing::message_of<ConfigError>([] { device_for_rank(Device::cuda(0), "cuda", placement(2, 3, 2, 3), 2); }),
            "rank 2 is local rank 2 on a machine with 2 usable GPUs: start at most one rank per GPU on each machine");
}

// Note [One core per rank]: two ranks on one machine each take half of the
// cores this process may use (at least one), unless OMP_NUM_THREADS is set.
TEST(DataParallelJob, RanksOnOneMachineShareItsCores) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) GTEST_SKIP() << "OMP_NUM_THREADS is set: it decides the team size";
  const int saved = omp_get_max_threads();
  const int machine = static_cast<int>(std::thread::hardware_concurrency()), usable = usable_cores();
  // A process bound to fewer cores than the machine has (taskset, a container's
  // cpuset) takes them as its share already, as mpirun's binding gives them.
  EXPECT_EQ(share_cpu_cores(Device::cpu(), placement(1, 2, 1, 2)),
            usable >= machine ? std::max(1, usable / 2) : usable);
  omp_set_num_threads(saved);
  EXPECT_EQ(share_cpu_cores(Device::cpu(), placement(0, 1, 0, 1)), saved);  // alone: unchanged
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace glassbox
