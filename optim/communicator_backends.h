// optim/communicator_backends.h: what optim/communicator.cpp needs from the
// files built only with MPI (optim/communicator_mpi.cpp) or only with CUDA
// (optim/communicator_nccl_cuda.cpp). Plain C++: no MPI or CUDA type appears
// here, so the NCCL file can exchange its unique id through MPI without
// including mpi.h. In a build without MPI (or CUDA), communicator.cpp defines
// these functions itself, and they throw ConfigError (NotBuiltError) saying so.
// Internal to the library: programs use optim/communicator.h.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "optim/communicator.h"

namespace glassbox::communicator_backends {

inline constexpr bool kBuiltWithMpi = GLASSBOX_WITH_MPI != 0;

// getenv's shape: the value of a variable, or null when it is not set.
using EnvironmentReader = std::function<const char*(const char*)>;
// job_placement() from any environment (tests pass their own): OpenMPI's
// OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}, else MPICH's PMI_RANK,
// PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS (PMIX_RANK for the rank), else a
// job of one. No local variables: one machine. A malformed or inconsistent
// value is a ConfigError naming the variable.
JobPlacement parse_job_placement(const EnvironmentReader& env);

// ConfigError unless `data` is float32 on ctx's device ("all-reduce: ...").
void check_reducible(const Context& ctx, const Tensor& data, std::string_view operation);
// ConfigError unless 0 <= root < size, naming this rank and the operation.
void check_root(int root, int rank, int size, std::string_view operation);
// The ConfigError of a multi-rank job in a build without MPI.
[[noreturn]] void throw_built_without_mpi(int size);

// MPI_Init_thread(MPI_THREAD_FUNNELED) on the first call, MPI_Finalize at
// normal exit (std::atexit). Checks that MPI's world agrees with `placement`.
void ensure_mpi(const JobPlacement& placement);
// Whether MPI_Init has run and MPI_Finalize has not.
bool mpi_active();
// MPI_Abort(MPI_COMM_WORLD, code): ends every rank of the job.
[[noreturn]] void mpi_abort(int code);
// Blocking: rank `root`'s bytes copied into every rank's `bytes` (same length
// everywhere), over MPI_COMM_WORLD. For NCCL's unique id.
void broadcast_bytes(int root, std::span<std::byte> bytes);

std::unique_ptr<Communicator> make_mpi(const JobPlacement& placement, const CommunicatorOptions& options);
std::unique_ptr<Communicator> make_nccl(Context& ctx, const JobPlacement& placement,
                                        const CommunicatorOptions& options);

}  // namespace glassbox::communicator_backends
