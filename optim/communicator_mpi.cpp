// optim/communicator_mpi.cpp: the CPU communicator on MPI (built only with
// MPI), and the MPI runtime the NCCL communicator borrows to exchange its id.
//
//   start_average:  MPI_Iallreduce(MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) on the
//                   host data; when the completion is observed (progress()
//                   or wait_all()), data[i] /= size.
//   wait_all:       MPI_Testsome until nothing is in flight or the deadline.
//   broadcast, all_gather: the non-blocking collectives, waited on the same way,
//                   so that set-up cannot hang either.
// Every call goes through a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN,
// so that an MPI failure is a CommunicationError naming the rank and the
// operation, with MPI's own message, and not an abort inside MPI.
//
// Note [Set-up messages apart from gradients]: MPI matches collectives on a
// communicator by their order alone. Ranks that disagree on the number of
// steps could otherwise match one rank's all-gather of a few bytes with
// another's all-reduce of a gradient bucket, and MPI would write the bucket
// into the gather's buffer. So the gradients and the set-up collectives
// (broadcast, all_gather) go through two duplicates of MPI_COMM_WORLD: a
// mismatch then waits until the deadline and fails with a message, and the
// gathered lengths are checked before anything is allocated from them.
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "optim/communicator_backends.h"

namespace glassbox::communicator_backends {
namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return cat("MPI error code ", code);
  return std::string(text, static_cast<size_t>(length));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// A duplicate of MPI_COMM_WORLD whose errors are returned, not fatal; freed
// unless MPI has been finalised already (a communicator outliving main).
class OwnedComm {
 public:
  explicit OwnedComm(std::string_view who) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), who, "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), who, "MPI_Comm_set_errhandler");
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  ~OwnedComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  MPI_Comm get() const { return comm_; }

  static void check(int code, std::string_view who, std::string_view call) {
    if (code != MPI_SUCCESS) throw CommunicationError(cat(who, call, " failed: ", mpi_message(code)));
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

int checked_count(size_t count, std::string_view who, std::string_view operation, size_t bytes) {
  if (count > static_cast<size_t>(INT_MAX)) {
    throw ConfigError(cat(who, operation, " of ", format_bytes(static_cast<int64_t>(bytes)), ": ", count,
                          " elements, more than MPI's int count allows (", INT_MAX, "); split it"));
  }
  return static_cast<int>(count);
}

// Note [Progressing MPI]: OpenMPI 4.1 runs its non-blocking collectives
// (coll/libnbc) as schedules of point-to-point rounds, and a round advances
// only inside the progress engine (opal_progress), which runs inside MPI
// calls: OpenMPI starts no progress thread for them by default. A rank that
// started MPI_Iallreduce and then computes for 50 ms without calling MPI
// leaves its part of the reduction (and its peers, waiting for it) where it
// was. Hence progress(), called between layers of backward: one MPI_Testsome
// per call, cheap when nothing moved. Measured here: tests/mpi/
// communicator_driver.cpp's `progress-check` (docs/data_parallel.md).
//
// Note [Polling without starving the peer]: wait_all polls MPI_Testsome; on a
// machine with as many ranks as cores (or more), a rank that spins takes the
// core its peer needs to make the progress it waits for. So it spins for the
// first kSpinFor of a wait (short reductions finish there at full speed) and
// then sleeps kPollSleep between polls.
constexpr auto kSpinFor = std::chrono::milliseconds(2);

constexpr auto kPollSleep = std::chrono::microseconds(50);

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const JobPlacement& placement, const CommunicatorOptions& options)
      : rank_(placement.rank),
        size_(placement.size),
        who_(cat("rank ", placement.rank, " of ", placement.size, ": ")),
        timeout_(options.timeout_seconds),
        comm_(who_),
        setup_comm_(who_) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "mpi"; }

  void begin_step(Context&) override {
    check_usable();
    if (!pending_.empty()) {
      throw CommunicationError(cat(who_, "begin_step with ", pending_.size(),
                                   " reductions of the last step still in flight (call wait_all first)"));
    }
    begin_ = Clock::now();
    times_.clear();
  }

  void start_average(Context& ctx, const Tensor& data) override {
    check_usable();
    check_reducible(ctx, data, cat(who_, "all-reduce"));
    const size_t index = times_.size();
    const double now = ms_since_begin();
    times_.push_back({data.bytes(), now, now});  // (a Tensor has at least one element: Shape says so)
    const int count = checked_count(static_cast<size_t>(data.numel()), who_, "all-reduce", data.bytes());
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(MPI_IN_PLACE, data.raw(), count, MPI_FLOAT, MPI_SUM, comm_.get(), &request),
          "MPI_Iallreduce", index);
    requests_.push_back(request);
    pending_.push_back(Pending{data.data<float>(), static_cast<size_t>(count), index});
  }

  void progress() override {
    if (pending_.empty() || broken_) return;
    int completed = 0;
    indices_.resize(requests_.size());
    check(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &completed, indices_.data(),
                       MPI_STATUSES_IGNORE),
          "MPI_Testsome", pending_.front().index);
    if (completed == MPI_UNDEFINED || completed == 0) return;
    for (int i = 0; i < completed; ++i) finish(pending_[static_cast<size_t>(indices_[static_cast<size_t>(i)])]);
    // MPI_Testsome set the completed requests to MPI_REQUEST_NULL: keep the rest, in order.
    size_t kept = 0;
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) continue;
      requests_[kept] = requests_[i];
      pending_[kept] = pending_[i];
      ++kept;
    }
    requests_.resize(kept);
    pending_.resize(kept);
  }

  void wait_all(Context&) override {
    check_usable();
    const Clock::time_point start = Clock::now();
    for (;;) {
      progress();
      if (pending_.empty()) return;
      const auto waited = Clock::now() - start;
      if (waited > std::chrono::duration<double>(timeout_)) {
        broken_ = true;
        const Pending& oldest = pending_.front();
        throw CommunicationError(
            cat(who_, "all-reduce of ", format_bytes(static_cast<int64_t>(times_[oldest.index].bytes)),
                " (reduction ", oldest.index, " of this step) did not finish within ", timeout_,
                " s; another rank may have exited or hung (", pending_.size(), " of ", times_.size(),
                " reductions unfinished)"));
      }
      if (waited > kSpinFor) std::this_thread::sleep_for(kPollSleep);  // Note [Polling without starving the peer]
    }
  }

  std::vector<ReductionTime> last_times() override { return times_; }

  void broadcast(Context& ctx, const Tensor& data, int root) override {
    check_usable();
    check_root(root, rank_, size_, "broadcast");
    if (ctx.is_cuda() || data.device() != ctx.device()) {
      throw ConfigError(cat(who_, "broadcast: the MPI communicator takes host data, not ", data.device().str()));
    }
    const int count = checked_count(data.bytes(), who_, "broadcast", data.bytes());
    MPI_Request request = MPI_REQUEST_NULL;
    check_call(MPI_Ibcast(data.raw(), count, MPI_BYTE, root, setup_comm_.get(), &request), "MPI_Ibcast");
    wait_for(request, cat("broadcast of ", format_bytes(static_cast<int64_t>(data.bytes())), " from rank ", root));
  }

  std::vector<std::string> all_gather(std::string_view mine) override {
    check_usable();
    if (mine.size() > kMaxGatherBytes) {
      throw ConfigError(cat(who_, "all-gather of ", format_bytes(static_cast<int64_t>(mine.size())),
                            ": more than a set-up message may hold (",
                            format_bytes(static_cast<int64_t>(kMaxGatherBytes)), ")"));
    }
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size_));
    MPI_Request request = MPI_REQUEST_NULL;
    check_call(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, setup_comm_.get(), &request),
               "MPI_Iallgather");
    wait_for(request, "all-gather of the string lengths");
    std::vector<int> offsets(lengths.size());
    size_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      // Note [Set-up messages apart from gradients]: a length is another
      // rank's word, checked before it sizes anything.
      if (lengths[r] < 0 || static_cast<size_t>(lengths[r]) > kMaxGatherBytes) {
        broken_ = true;
        throw CommunicationError(cat(who_, "all-gather: rank ", r, " announces ", lengths[r],
                                     " bytes, outside [0, ", kMaxGatherBytes,
                                     "]; the ranks are not running the same program at the same point"));
      }
      offsets[r] = static_cast<int>(total);
      total += static_cast<size_t>(lengths[r]);
    }
    checked_count(total, who_, "all-gather", total);
    std::string gathered(total, '\0');
    check_call(MPI_Iallgatherv(mine.data(), length, MPI_CHAR, gathered.data(), lengths.data(), offsets.data(),
                               MPI_CHAR, setup_comm_.get(), &request),
               "MPI_Iallgatherv");
    wait_for(request, cat("all-gather of ", format_bytes(static_cast<int64_t>(total))));
    std::vector<std::string> all;
    for (size_t r = 0; r < lengths.size(); ++r) {
      all.push_back(gathered.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
    }
    return all;
  }

 private:
  struct Pending {
    float* data = nullptr;
    size_t count = 0;
    size_t index = 0;  // in times_
  };

  double ms_since_begin() const { return std::chrono::duration<double, std::milli>(Clock::now() - begin_).count(); }

  // The sum is complete: make it the mean. Division, not a multiplication by
  // 1/size: for any size the result is the correctly rounded quotient of the
  // reduced sum (x * (1/3.0f) can be one ulp off x / 3), and a loop this
  // simple is bound by memory either way; the compiler vectorises it.
  void finish(const Pending& done) {
    const float size = static_cast<float>(size_);
    float* data = done.data;
    for (size_t i = 0; i < done.count; ++i) data[i] /= size;
    times_[done.index].done_ms = ms_since_begin();
  }

  void check_usable() const {
    if (broken_) {
      throw CommunicationError(cat(who_, "the MPI communicator failed earlier (a timeout or an MPI error); "
                                         "the job cannot go on"));
    }
  }
  void check(int code, std::string_view call, size_t index) {
    if (code == MPI_SUCCESS) return;
    broken_ = true;
    throw CommunicationError(cat(who_, call, " for all-reduce of ",
                                 format_bytes(static_cast<int64_t>(times_[index].bytes)), " (reduction ", index,
                                 " of this step) failed: ", mpi_message(code)));
  }
  void check_call(int code, std::string_view call) {
    if (code == MPI_SUCCESS) return;
    broken_ = true;
    OwnedComm::check(code, who_, call);
  }
  // One blocking set-up collective, with the same deadline as wait_all.
  void wait_for(MPI_Request& request, const std::string& what) {
    const Clock::time_point start = Clock::now();
    for (;;) {
      int done = 0;
      check_call(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      const auto waited = Clock::now() - start;
      if (waited > std::chrono::duration<double>(timeout_)) {
        broken_ = true;
        throw CommunicationError(cat(who_, what, " did not finish within ", timeout_,
                                     " s; another rank may have exited or hung"));
      }
      if (waited > kSpinFor) std::this_thread::sleep_for(kPollSleep);
    }
  }

  int rank_;
  int size_;
  std::string who_;  // "rank 1 of 2: ", the start of every message
  double timeout_;
  OwnedComm comm_;        // the gradients' all-reduces
  OwnedComm setup_comm_;  // broadcast and all_gather: Note [Set-up messages apart from gradients]
  bool broken_ = false;  // a reduction failed or timed out: nothing more can be trusted
  Clock::time_point begin_ = Clock::now();
  std::vector<ReductionTime> times_;  // this step's reductions, in start order
  std::vector<MPI_Request> requests_;  // in flight, in start order
  std::vector<Pending> pending_;       // beside requests_
  std::vector<int> indices_;           // MPI_Testsome's output
};

}  // namespace

void ensure_mpi(const JobPlacement& placement) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // FUNNELED: only the thread that initialised MPI calls it (the training
    // loop's); the data loader's threads never do.
    int provided = MPI_THREAD_SINGLE;
    OwnedComm::check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "", "MPI_Init_thread");
    std::atexit(finalize_at_exit);
    if (provided < MPI_THREAD_FUNNELED) {
      throw CommunicationError("MPI_Init_thread: this MPI does not provide MPI_THREAD_FUNNELED");
    }
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw CommunicationError("MPI was finalised already: no communicator can be made");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != placement.rank || size != placement.size) {
    throw ConfigError(cat("MPI says this is rank ", rank, " of ", size, ", the launcher's environment rank ",
                          placement.rank, " of ", placement.size, ": started by a different launcher?"));
  }
}

bool mpi_active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; should it, the process still ends
}

void broadcast_bytes(int root, std::span<std::byte> bytes) {
  const JobPlacement placement = job_placement();
  ensure_mpi(placement);
  const std::string who = cat("rank ", placement.rank, " of ", placement.size, ": ");
  check_root(root, placement.rank, placement.size, "broadcast of bytes");
  OwnedComm comm(who);
  OwnedComm::check(MPI_Bcast(bytes.data(), checked_count(bytes.size(), who, "broadcast", bytes.size()), MPI_BYTE,
                             root, comm.get()),
                   who, "MPI_Bcast");
}

std::unique_ptr<Communicator> make_mpi(const JobPlacement& placement, const CommunicatorOptions& options) {
  ensure_mpi(placement);
  return std::make_unique<MpiCommunicator>(placement, options);
}

}  // namespace glassbox::communicator_backends
