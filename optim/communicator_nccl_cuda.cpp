// optim/communicator_nccl_cuda.cpp: the CUDA communicator on NCCL (built only
// with CUDA). One rank per GPU; the rank's Context is on cuda:(local_rank %
// device count).
//
//   start_average: ready event on ctx's stream -> the communication stream
//                  waits on it -> ncclAllReduce(in place, ncclFloat, ncclAvg)
//                  -> done event on the communication stream.
//   wait_all:      ctx's stream waits on the last done event; a step-done
//                  event follows it on the communication stream, and the
//                  host polls the previous step's step-done event and
//                  ncclCommGetAsyncError until the deadline, and on an error
//                  or past it aborts the NCCL communicator (ncclCommAbort)
//                  and throws CommunicationError.
//   settle:        the same poll of this step's step-done event.
//
// Note [Watching the previous step's reductions]: the host must not wait for
// a step's all-reduces when it queues them (it would idle the device while it
// queues the next step: Note [Reading a step's results a step late],
// tensor/step_readback.h), yet a rank that died must not hang the others:
// NCCL waits for it forever, and so would the device. So the host watches
// one step behind: while queuing step k + 1 it polls step k's step-done
// event, done long before in a healthy job, with the deadline and NCCL's
// asynchronous error, and aborts on either. Each step's event is its own (two
// in turn): the done events are recorded again by the next step, after which
// they stand for its reductions, not the earlier ones. settle() watches the
// last step before the host reads its results or the epoch ends.
//   last_times:    cudaEventElapsedTime from the begin_step event.
// The unique id comes from rank 0: made locally for a job of one, broadcast
// over MPI (optim/communicator_mpi.cpp, broadcast_bytes) for more; this file
// includes no MPI header. A job of one rank runs on a GPU and passes its
// tests; more than one rank (several GPUs, the id over MPI) is unverified
// (docs/data_parallel.md).
#include <nccl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <span>
#include <thread>

#include "optim/communicator_backends.h"
#include "optim/data_parallel_job.h"
#include "tensor/checks_cuda.h"
#include "tensor/context_cuda.h"

#define NCCL_CHECK(expr) GLASSBOX_CHECK_STATUS(expr, ncclSuccess, nccl_error_text, "NCCL")

namespace glassbox::communicator_backends {
namespace {

// ncclGetErrorString names only the kind of a failure ("unhandled system
// error", "invalid usage"); ncclGetLastError keeps the text of NCCL's last
// warning (the peer, the transport, the argument), which it never clears, so
// it may be an earlier warning's: an error gives it as that.
std::string nccl_error_text(ncclResult_t status, ncclComm_t comm = nullptr) {
  const char* reason = ncclGetLastError(comm);
  if (reason == nullptr || *reason == '\0') return ncclGetErrorString(status);
  return cat(ncclGetErrorString(status), " (NCCL's last warning: ", reason, ")");
}

using Clock = std::chrono::steady_clock;

CudaEvent make_event() {
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreate(&event));  // with timing: last_times reads them
  return CudaEvent(event);
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Context& ctx, const JobPlacement& placement, const CommunicatorOptions& options)
      : rank_(placement.rank),
        size_(placement.size),
        who_(cat("rank ", placement.rank, " of ", placement.size, ": ")),
        timeout_(options.timeout_seconds),
        device_(ctx.device().index) {
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (const std::string wrong = rank_device_mismatch(placement, device_, devices); !wrong.empty()) {
      throw ConfigError(cat(who_, wrong));
    }
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    if (size_ > 1) {
      if (!kBuiltWithMpi) throw_built_without_mpi(size_);
      broadcast_bytes(0, std::as_writable_bytes(std::span(&id, 1)));
    }
    CUDA_CHECK(cudaSetDevice(device_));
    // Blocks until every rank has joined: no deadline here (NCCL's blocking
    // init); the broadcast above has already met every rank.
    NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_ = CudaStream(stream);
    begin_ = make_event();
    for (CudaEvent& e : step_done_) e = make_event();
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  // Note [Ending an NCCL communicator]: ncclCommDestroy finalizes first, and
  // finalizing waits for every operation issued, which never ends where a
  // peer has gone. So a communicator ended while an exception unwinds (a job
  // stopping on an error) aborts, which returns at once; otherwise the
  // destructor lets the communication stream's work finish within the
  // deadline, as a step's reductions would, then destroys, and aborts past
  // the deadline or on an error.
  ~NcclCommunicator() override {
    if (comm_ == nullptr || aborted_) return;
    if (std::uncaught_exceptions() == 0 && stream_drains()) {
      (void)ncclCommDestroy(comm_);
    } else {
      (void)ncclCommAbort(comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "nccl"; }

  void begin_step(Context& ctx) override {
    check_usable(ctx);
    CUDA_CHECK(cudaEventRecord(begin_.get(), stream_of(ctx)));
    bytes_.clear();
  }

  void start_average(Context& ctx, const Tensor& data) override {
    check_usable(ctx);
    check_reducible(ctx, data, cat(who_, "all-reduce"));
    const size_t index = bytes_.size();
    while (ready_.size() <= index) {
      ready_.push_back(make_event());
      done_.push_back(make_event());
    }
    CUDA_CHECK(cudaEventRecord(ready_[index].get(), stream_of(ctx)));
    CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), ready_[index].get(), 0));
    NCCL_CHECK(ncclAllReduce(data.raw(), data.raw(), static_cast<size_t>(data.numel()), ncclFloat, ncclAvg, comm_,
                             stream_.get()));
    CUDA_CHECK(cudaEventRecord(done_[index].get(), stream_.get()));
    bytes_.push_back(data.bytes());
  }

  void progress() override {}  // NCCL runs on the GPU; nothing for the host to drive

  void wait_all(Context& ctx) override {
    check_usable(ctx);
    if (bytes_.empty()) return;
    const size_t last = bytes_.size() - 1;
    CUDA_CHECK(cudaStreamWaitEvent(stream_of(ctx), done_[last].get(), 0));
    // Note [Watching the previous step's reductions]
    const int turn = pending_ < 0 ? 0 : 1 - pending_;
    CUDA_CHECK(cudaEventRecord(step_done_[static_cast<size_t>(turn)].get(), stream_.get()));
    settle(ctx);  // the previous step's
    pending_ = turn;
    pending_what_ = cat("all-reduce of ", format_bytes(static_cast<int64_t>(bytes_[last])), " (the last of ",
                        bytes_.size(), " reductions of a step)");
  }

  void settle(Context& ctx) override {
    check_usable(ctx);
    watch_pending();
  }

  std::vector<ReductionTime> last_times() override {
    watch_pending();
    std::vector<ReductionTime> times;
    for (size_t i = 0; i < bytes_.size(); ++i) {
      CUDA_CHECK(cudaEventSynchronize(done_[i].get()));
      float ready = 0.0f, done = 0.0f;
      CUDA_CHECK(cudaEventElapsedTime(&ready, begin_.get(), ready_[i].get()));
      CUDA_CHECK(cudaEventElapsedTime(&done, begin_.get(), done_[i].get()));
      times.push_back({bytes_[i], ready, done});
    }
    return times;
  }

  void broadcast(Context& ctx, const Tensor& data, int root) override {
    check_usable(ctx);
    check_root(root, rank_, size_, "broadcast");
    if (data.device() != ctx.device()) {
      throw ConfigError(cat(who_, "broadcast: the data is on ", data.device().str(), ", the context on ",
                            ctx.device().str()));
    }
    CudaEvent ready = make_event(), done = make_event();
    CUDA_CHECK(cudaEventRecord(ready.get(), stream_of(ctx)));
    CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), ready.get(), 0));
    NCCL_CHECK(ncclBroadcast(data.raw(), data.raw(), data.bytes(), ncclUint8, root, comm_, stream_.get()));
    CUDA_CHECK(cudaEventRecord(done.get(), stream_.get()));
    CUDA_CHECK(cudaStreamWaitEvent(stream_of(ctx), done.get(), 0));
    wait_for(done.get(), cat("broadcast of ", format_bytes(static_cast<int64_t>(data.bytes())), " from rank ", root));
  }

  // Through the GPU: every rank's length, then every string padded to the longest.
  std::vector<std::string> all_gather(std::string_view mine) override {
    if (mine.size() > kMaxGatherBytes) {
      throw ConfigError(cat(who_, "all-gather of ", format_bytes(static_cast<int64_t>(mine.size())),
                            ": more than a set-up message may hold (",
                            format_bytes(static_cast<int64_t>(kMaxGatherBytes)), ")"));
    }
    const std::vector<int64_t> lengths = gather_bytes<int64_t>({static_cast<int64_t>(mine.size())}, "lengths");
    size_t longest = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      // Another rank's word, checked before it sizes the second gather.
      if (lengths[r] < 0 || static_cast<size_t>(lengths[r]) > kMaxGatherBytes) {
        abort();
        throw CommunicationError(cat(who_, "all-gather: rank ", r, " announces ", lengths[r],
                                     " bytes, outside [0, ", kMaxGatherBytes,
                                     "]; the ranks are not running the same program at the same point"));
      }
      longest = std::max(longest, static_cast<size_t>(lengths[r]));
    }
    std::vector<char> padded(std::max<size_t>(longest, 1), '\0');
    std::memcpy(padded.data(), mine.data(), mine.size());
    const std::vector<char> all = gather_bytes<char>(padded, "strings");
    std::vector<std::string> result;
    for (size_t r = 0; r < lengths.size(); ++r) {
      result.emplace_back(all.data() + r * padded.size(), static_cast<size_t>(lengths[r]));
    }
    return result;
  }

 private:
  void check_usable(const Context& ctx) const {
    if (aborted_) {
      throw CommunicationError(cat(who_, "the NCCL communicator was aborted after an error or a timeout; "
                                         "the job cannot go on"));
    }
    if (!ctx.is_cuda() || ctx.device().index != device_) {
      throw ConfigError(cat(who_, "the NCCL communicator of cuda:", device_, " was given a context on ",
                            ctx.device().str()));
    }
  }

  // Polls `event` and NCCL's asynchronous error until the deadline.
  void wait_for(cudaEvent_t event, const std::string& what) {
    const Clock::time_point start = Clock::now();
    for (;;) {
      const cudaError_t state = cudaEventQuery(event);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) CUDA_CHECK(state);
      ncclResult_t async = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string reason = nccl_error_text(async, comm_);  // before the abort's own warnings
        abort();
        throw CommunicationError(cat(who_, what, " failed: ", reason, " (NCCL)"));
      }
      if (Clock::now() - start > std::chrono::duration<double>(timeout_)) {
        abort();
        throw CommunicationError(cat(who_, what, " did not finish within ", timeout_,
                                     " s; another rank may have exited or hung"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Note [Watching the previous step's reductions]: the step-done event not
  // watched yet, if any, polled until the deadline.
  void watch_pending() {
    if (pending_ < 0) return;
    wait_for(step_done_[static_cast<size_t>(pending_)].get(), pending_what_);
    pending_ = -1;
  }

  void abort() {
    if (!aborted_) (void)ncclCommAbort(comm_);
    aborted_ = true;
  }

  // Whether the communication stream's work finishes within the deadline,
  // without NCCL reporting an error. Throws nothing: for the destructor.
  bool stream_drains() {
    if (stream_.get() == nullptr) return true;
    const Clock::time_point start = Clock::now();
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream_.get());
      if (state == cudaSuccess) return true;
      if (state != cudaErrorNotReady) {
        (void)cudaGetLastError();
        return false;
      }
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        return false;
      }
      if (Clock::now() - start > std::chrono::duration<double>(timeout_)) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Every rank's `mine` (the same length on every rank), in rank order. The
  // buffer comes and goes on the communication stream (cudaMallocAsync and
  // cudaFreeAsync), so nothing here waits on the whole device, whose other
  // work the deadline does not cover; the copy back starts once the gather
  // is watched done.
  template <typename T>
  std::vector<T> gather_bytes(const std::vector<T>& mine, std::string_view what) {
    const size_t bytes = mine.size() * sizeof(T);
    void* device = nullptr;
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaMallocAsync(&device, bytes * static_cast<size_t>(size_), stream_.get()));
    std::vector<T> all(mine.size() * static_cast<size_t>(size_));
    try {
      CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(device) + bytes * static_cast<size_t>(rank_), mine.data(), bytes,
                                 cudaMemcpyHostToDevice, stream_.get()));
      NCCL_CHECK(ncclAllGather(static_cast<char*>(device) + bytes * static_cast<size_t>(rank_), device, bytes,
                               ncclUint8, comm_, stream_.get()));
      CudaEvent done = make_event();
      CUDA_CHECK(cudaEventRecord(done.get(), stream_.get()));
      wait_for(done.get(), cat("all-gather of the ", what));
      // Done already: the copy back cannot wait on a peer.
      CUDA_CHECK(cudaMemcpyAsync(all.data(), device, bytes * static_cast<size_t>(size_), cudaMemcpyDeviceToHost,
                                 stream_.get()));
      CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    } catch (...) {
      (void)cudaFreeAsync(device, stream_.get());
      throw;
    }
    CUDA_CHECK(cudaFreeAsync(device, stream_.get()));
    return all;
  }

  int rank_;
  int size_;
  std::string who_;
  double timeout_;
  int device_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  CudaStream stream_;                        // the communication stream
  CudaEvent begin_;                          // begin_step, on ctx's stream
  std::vector<CudaEvent> ready_, done_;      // per reduction of a step, reused across steps
  // Note [Watching the previous step's reductions]: two in turn, on the
  // communication stream after a step's last reduction; the one the host has
  // not watched yet (-1: none), and what it stands for.
  std::array<CudaEvent, 2> step_done_;
  int pending_ = -1;
  std::string pending_what_;
  std::vector<size_t> bytes_;                // this step's reductions, in start order
};

}  // namespace

std::unique_ptr<Communicator> make_nccl(Context& ctx, const JobPlacement& placement,
                                        const CommunicatorOptions& options) {
  return std::make_unique<NcclCommunicator>(ctx, placement, options);
}

}  // namespace glassbox::communicator_backends
