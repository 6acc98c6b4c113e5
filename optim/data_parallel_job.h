// optim/data_parallel_job.h: what a program does to join a data-parallel job
// (one process per device, launched by mpirun), in one place, so that
// `glassbox train` and bench_nets join it the same way:
//
//   const JobPlacement placement = job_placement();
//   const Device device = device_for_rank(choice.device, flag_text, placement);
//   share_cpu_cores(device, placement);
//   Context ctx = Context::on(device);
//   std::unique_ptr<Communicator> communicator = make_communicator(ctx, {...});
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "optim/communicator.h"
#include "tensor/device.h"

namespace glassbox {

// The device this rank drives. In a job of more than one rank on a GPU, each
// rank takes the GPU of its local rank (cuda:local_rank), so `--device cuda`
// (or none) works for every rank; naming one GPU (`cuda:N`, `requested_text`)
// with more than one rank on the machine is a ConfigError, as is a local rank
// past the machine's last GPU. On the CPU, in a job of one, and for the only
// rank on its machine that names its GPU, `chosen`. `gpu_count` is the number
// of usable GPUs here (cuda_availability()).
Device device_for_rank(Device chosen, std::string_view requested_text, const JobPlacement& placement, int gpu_count);

// Why this rank's context, on cuda:`device` of `visible_gpus`, is not where
// device_for_rank puts a rank, for the NCCL communicator to refuse; "" where
// it is, and wherever the rank shares its machine with no other rank (a job
// of one included: `--device cuda:1` alone runs on cuda:1).
std::string rank_device_mismatch(const JobPlacement& placement, int device, int visible_gpus);

// Note [One core per rank]: ranks on one machine share its cores. Each rank's
// OpenMP team would otherwise take every core, so that N ranks run N teams
// on the same cores, and libgomp's spinning waits make that many times
// slower, not merely shared. On the CPU, with more than one rank on the
// machine and OMP_NUM_THREADS unset, each rank's team is sized to its share
// of the cores this process may run on (at least 1). Returns the team size.
int share_cpu_cores(Device device, const JobPlacement& placement);

// Whether `out` is a terminal that a person reads, so that redrawn lines,
// erase codes and colours are wanted: isatty, and not a rank of an mpirun
// job. Open MPI hands each rank's stdout a pseudo-terminal of its own and
// copies what arrives there to mpirun's stdout, which may be a pipe or a
// file: a rank's isatty says yes either way.
bool output_is_terminal(std::FILE* out, const JobPlacement& placement);

}  // namespace glassbox
