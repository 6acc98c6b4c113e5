// optim/communicator.h: the collective of a data-parallel job, one process per
// device (DESIGN.md section 3, step 5).
//
// Every rank holds the same network; after backward each rank's flat gradient
// buffer is replaced by the mean over all ranks, piece by piece (buckets,
// optim/gradient_sync.h), so that the optimizer steps identically everywhere.
//
// Two implementations, both on engines the field already uses:
//   MPI  (CPU):  MPI_Iallreduce(MPI_SUM) in place, then a scale by 1/size
//                (optim/communicator_mpi.cpp);
//   NCCL (CUDA): ncclAllReduce(ncclAvg) on a communication stream that waits
//                on an event of the compute stream (optim/communicator_nccl_cuda.cpp).
// make_communicator() picks the one for the context's device. A process that
// was not launched by mpirun (or was, with one rank) gets a communicator of
// size 1 for its device: NCCL with one rank is legal and exercises the whole
// path, and on the CPU the one-rank communicator averages nothing.
//
// Failures never hang a job: every wait has a deadline (CommunicatorOptions::
// timeout_seconds). When it passes, or NCCL reports an asynchronous error,
// the communicator throws CommunicationError naming this rank, the operation
// and its size; the program's entry point then ends the whole job
// (abort_job), so that no other rank waits forever for this one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/context.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace glassbox {

// A collective that failed or timed out: "rank 1 of 2: all-reduce of 25.00 MiB
// (bucket 3) did not finish within 300 s: ...".
class CommunicationError : public Error {
 public:
  using Error::Error;
};

// Where this process stands in its job, from the launcher's environment
// (OpenMPI's OMPI_COMM_WORLD_*, else PMI_*/PMIX_*, else a job of one).
struct JobPlacement {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // rank among the processes on this machine: picks the GPU
  int local_size = 1;
  bool launched_by_mpi = false;
};
// Read once; never initialises MPI.
JobPlacement job_placement();

// The most one rank sends in an all_gather: set-up descriptions and
// per-epoch scores are a few hundred bytes.
inline constexpr size_t kMaxGatherBytes = size_t{1} << 20;

struct CommunicatorOptions {
  double timeout_seconds = 300.0;  // per wait; a collective slower than this is a failure
};

// When each reduction of a step began and ended, in milliseconds from the
// communicator's begin_step() mark: on the CPU from the host clock (the end
// is when a progress() or wait_all() saw it finished), on CUDA from events.
struct ReductionTime {
  size_t bytes = 0;
  double ready_ms = 0.0;  // start_average was called (the gradients were complete)
  double done_ms = 0.0;   // the averaged values were in place
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view backend() const = 0;  // "mpi", "nccl" or "single"

  // Time zero for last_times(): call at the start of each step's backward.
  virtual void begin_step(Context& ctx) = 0;
  // Starts replacing `data` (float32, on ctx's device, contiguous) with its
  // mean over all ranks, in place. Every rank must start the same
  // reductions in the same order with the same sizes. On CUDA the reduction
  // is ordered after everything already queued on ctx's stream; on the CPU
  // the data must be complete when this is called. Returns at once.
  virtual void start_average(Context& ctx, const Tensor& data) = 0;
  // Lets started reductions advance without blocking (MPI needs its library
  // called to progress a non-blocking collective: Note [Progressing MPI]).
  // Cheap; called after each layer's backward. No-op on CUDA.
  virtual void progress() = 0;
  // Every started reduction is complete before anything queued later on
  // ctx's stream (CUDA) or before this returns (CPU). Throws
  // CommunicationError past the deadline. On CUDA the host does not wait for
  // this step's reductions: it checks that the previous step's finished, with
  // the deadline (Note [Watching the previous step's reductions] in
  // optim/communicator_nccl_cuda.cpp).
  virtual void wait_all(Context& ctx) = 0;
  // The host waits, with the deadline, for every reduction wait_all has been
  // called for: before the host reads what the last step computed, and at
  // the end of an epoch. A no-op where wait_all waits itself.
  virtual void settle(Context& /*ctx*/) {}
  // The reductions of the last step, in start order (valid after wait_all;
  // on CUDA reading settles and waits for the events).
  virtual std::vector<ReductionTime> last_times() = 0;

  // Blocking, for set-up: rank `root`'s data copied to every rank.
  virtual void broadcast(Context& ctx, const Tensor& data, int root) = 0;
  // Blocking, for set-up checks on the host: every rank's string, in rank
  // order. Each rank sends at most kMaxGatherBytes: more is a ConfigError on
  // the sender, and a length outside that from another rank is a
  // CommunicationError, found before anything is allocated from it.
  virtual std::vector<std::string> all_gather(std::string_view mine) = 0;
};

// The communicator for ctx's device in this job. Initialises MPI when the
// process was launched by mpirun (and the build has MPI). Throws ConfigError
// when the job has more than one rank and this build cannot join it (built
// without MPI, or without NCCL for a CUDA device), naming what is missing.
std::unique_ptr<Communicator> make_communicator(Context& ctx, const CommunicatorOptions& options = {});

// Ends every process of the job after an error on this rank, with exit code
// `code`: MPI_Abort when MPI is initialised, else std::exit. Programs call
// it from their entry point once the error has been printed.
[[noreturn]] void abort_job(int code);

}  // namespace glassbox
