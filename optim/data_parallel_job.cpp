// optim/data_parallel_job.cpp
#include "optim/data_parallel_job.h"

#include <omp.h>
#include <unistd.h>  // isatty

#include "tensor/machine_load.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace glassbox {

Device device_for_rank(Device chosen, std::string_view requested_text, const JobPlacement& placement,
                       int gpu_count) {
  if (!chosen.is_cuda() || placement.size == 1) return chosen;
  const bool names_one = requested_text.find(':') != std::string_view::npos;
  if (names_one && placement.local_size > 1) {
    throw ConfigError(cat("--device ", requested_text, ": in a job of ", placement.size, " ranks, ",
                          placement.local_size, " on this machine, each rank takes the GPU of its local rank; "
                          "give --device cuda"));
  }
  if (names_one) return chosen;  // the machine's only rank: the GPU it names
  if (placement.local_rank >= gpu_count) {
    throw ConfigError(cat("rank ", placement.rank, " is local rank ", placement.local_rank, " on a machine with ",
                          gpu_count, " usable GPU", gpu_count == 1 ? "" : "s",
                          ": start at most one rank per GPU on each machine"));
  }
  return Device::cuda(placement.local_rank);
}

std::string rank_device_mismatch(const JobPlacement& placement, int device, int visible_gpus) {
  if (placement.local_size <= 1 || visible_gpus <= 0 || device == placement.local_rank % visible_gpus) return "";
  return cat("local rank ", placement.local_rank, " of ", visible_gpus, " visible GPUs should run on cuda:",
             placement.local_rank % visible_gpus, ", but its context is on cuda:", device);
}

int share_cpu_cores(Device device, const JobPlacement& placement) {
  if (device.is_cuda() || placement.local_size == 1 || std::getenv("OMP_NUM_THREADS") != nullptr) {
    return omp_get_max_threads();
  }
  const int machine = static_cast<int>(std::thread::hardware_concurrency());
  const int cores = usable_cores();
  // mpirun may already have bound each rank to its own cores (fewer than the
  // machine's): then `cores` is this rank's share and is not divided again.
  const int share = cores >= machine ? cores / placement.local_size : cores;
  omp_set_num_threads(std::max(1, share));
  return omp_get_max_threads();
}

bool output_is_terminal(std::FILE* out, const JobPlacement& placement) {
  return !placement.launched_by_mpi && isatty(fileno(out)) == 1;
}

}  // namespace glassbox
