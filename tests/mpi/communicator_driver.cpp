// tests/mpi/communicator_driver.cpp: one rank of the multi-rank communicator
// tests (tests/mpi/CMakeLists.txt runs it as `mpirun -np 2 communicator_driver
// <case>`). Each case checks its own results and exits non-zero, naming the
// rank and what differed, through tools/entry_point.h, which also ends the job.
//
//   average       the mean of rank-dependent data, exactly, for sizes from 1
//                 to 1 Mi + 3 elements (a Tensor is never empty), all in flight at once, progress() between
//   collectives   broadcast from the last rank; all_gather of strings of
//                 different lengths (one empty)
//   timeout       rank 0 waits (timeout 2 s) for a reduction that rank 1 never
//                 starts: CommunicationError, then the job ends (exit 1)
//   setup-timeout the same for a broadcast from rank 1 that rank 1 never joins
//   exit-early    rank 1 exits (code 3) before starting the reduction rank 0
//                 waits for: the job ends, it does not hang
//   progress-check  measures Note [Progressing MPI]: how much of a reduction
//                 completes while a rank computes without calling MPI
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "optim/communicator.h"
#include "tools/entry_point.h"

namespace glassbox {
namespace {

// data[i] = (rank + 1) * (i % 97 + 1): small integers, so every partial sum
// is exact in float32 whatever order MPI adds in, and the mean over ranks
// 0..n-1 is (n + 1) / 2 * (i % 97 + 1), exact for n = 2.
float value_at(int rank, int64_t i) { return static_cast<float>((rank + 1) * (i % 97 + 1)); }

int average(Communicator& comm, Context& ctx) {
  const std::vector<int64_t> sizes = {1, 7, 1000, 65537, (int64_t{1} << 20) + 3};
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> buffers;
    comm.begin_step(ctx);
    for (int64_t n : sizes) {
      Tensor t = ctx.allocate(Shape{n}, DType::kFloat32, MemoryCategory::kGradients);
      float* data = t.data<float>();
      for (int64_t i = 0; i < n; ++i) data[i] = value_at(comm.rank(), i) * static_cast<float>(step + 1);
      comm.start_average(ctx, t);
      comm.progress();  // as between layers of backward
      buffers.push_back(t);
    }
    comm.wait_all(ctx);
    const float ranks = static_cast<float>(comm.size());
    for (size_t b = 0; b < buffers.size(); ++b) {
      const float* data = buffers[b].data<float>();
      for (int64_t i = 0; i < sizes[b]; ++i) {
        const float expected = (ranks + 1.0f) / 2.0f * static_cast<float>(i % 97 + 1) * static_cast<float>(step + 1);
        if (data[i] != expected) {
          throw Error(cat("rank ", comm.rank(), ": step ", step, ", reduction ", b, " (", sizes[b],
                          " elements): element ", i, " is ", data[i], ", expected ", expected));
        }
      }
    }
    const std::vector<ReductionTime> times = comm.last_times();
    if (times.size() != sizes.size()) throw Error(cat("last_times has ", times.size(), " entries"));
    for (size_t b = 0; b < times.size(); ++b) {
      if (times[b].bytes != static_cast<size_t>(sizes[b]) * 4 || times[b].done_ms < times[b].ready_ms ||
          times[b].ready_ms < 0.0) {
        throw Error(cat("rank ", comm.rank(), ": last_times()[", b, "] = {", times[b].bytes, " B, ",
                        times[b].ready_ms, " ms, ", times[b].done_ms, " ms}"));
      }
    }
  }
  std::printf("rank %d of %d (%s): average ok\n", comm.rank(), comm.size(), std::string(comm.backend()).c_str());
  return 0;
}

int collectives(Communicator& comm, Context& ctx) {
  const int root = comm.size() - 1;
  Tensor t = ctx.allocate(Shape{1001}, DType::kFloat32, MemoryCategory::kParameters);
  float* data = t.data<float>();
  for (int i = 0; i < 1001; ++i) data[i] = comm.rank() == root ? 0.5f * static_cast<float>(i) : -1.0f;
  comm.broadcast(ctx, t, root);
  for (int i = 0; i < 1001; ++i) {
    if (data[i] != 0.5f * static_cast<float>(i)) {
      throw Error(cat("rank ", comm.rank(), ": after broadcast from ", root, ", element ", i, " is ", data[i]));
    }
  }
  // Rank r sends r copies of its letter: rank 0's string is empty.
  const std::vector<std::string> all = comm.all_gather(std::string(static_cast<size_t>(comm.rank()), 'a' + comm.rank()));
  for (int r = 0; r < comm.size(); ++r) {
    if (all.size() != static_cast<size_t>(comm.size()) || all[static_cast<size_t>(r)] != std::string(static_cast<size_t>(r), 'a' + r)) {
      throw Error(cat("rank ", comm.rank(), ": all_gather returned a wrong string for rank ", r));
    }
  }
  // More than kMaxGatherBytes is refused by the sender, before any rank sends anything.
  try {
    comm.all_gather(std::string(kMaxGatherBytes + 1, 'x'));
    throw Error(cat("rank ", comm.rank(), ": an all_gather of ", kMaxGatherBytes + 1, " bytes was accepted"));
  } catch (const ConfigError& e) {
    if (!std::string_view(e.what()).ends_with(
            "all-gather of 1.00 MiB: more than a set-up message may hold (1.00 MiB)")) {
      throw;
    }
  }
  // A new step while a reduction is in flight is refused, and the reduction still completes.
  comm.begin_step(ctx);
  comm.start_average(ctx, t);
  try {
    comm.begin_step(ctx);
    throw Error(cat("rank ", comm.rank(), ": begin_step with a reduction in flight was accepted"));
  } catch (const CommunicationError& e) {
    if (!std::string_view(e.what()).ends_with("begin_step with 1 reductions of the last step still in flight "
                                              "(call wait_all first)")) {
      throw;
    }
  }
  comm.wait_all(ctx);
  std::printf("rank %d of %d: collectives ok\n", comm.rank(), comm.size());
  return 0;
}

int timeout(Communicator& comm, Context& ctx) {
  Tensor t = ctx.allocate(Shape{25 << 18}, DType::kFloat32, MemoryCategory::kGradients);  // 25 MiB
  std::fill_n(t.data<float>(), t.numel(), 1.0f);
  if (comm.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // never starts it; ended by rank 0's abort_job
    return 0;
  }
  comm.begin_step(ctx);
  comm.start_average(ctx, t);
  try {
    comm.wait_all(ctx);  // throws after the 2 s deadline
  } catch (const CommunicationError&) {
    try {
      comm.begin_step(ctx);  // a failed communicator stays failed
    } catch (const CommunicationError& again) {
      std::fprintf(stderr, "after the timeout: %s\n", again.what());
    }
    throw;
  }
  return 0;
}

// A set-up collective has the same deadline: rank 1, the broadcast's root,
// never joins it, so rank 0 waits for data that never comes. (With rank 0 as
// the root, MPI may send its 4 KiB eagerly and finish the root's side without
// the other rank: rank 0 then returned and waited 60 s in MPI_Finalize, and
// the test failed now and then under load.)
int setup_timeout(Communicator& comm, Context& ctx) {
  Tensor t = ctx.allocate(Shape{1000}, DType::kFloat32, MemoryCategory::kParameters);
  if (comm.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  comm.broadcast(ctx, t, /*root=*/1);
  return 0;
}

// Ranks out of step: rank 0 gathers a few bytes of set-up text while rank 1
// all-reduces a 1 MiB gradient bucket. The two go through different MPI
// communicators (Note [Set-up messages apart from gradients]), so neither
// receives the other's message: both wait until the 2 s deadline and fail
// with a message, and no buffer is overrun.
int mismatched_collectives(Communicator& comm, Context& ctx) {
  if (comm.rank() == 0) {
    comm.all_gather("a few bytes");
    return 0;
  }
  Tensor t = ctx.allocate(Shape{1 << 18}, DType::kFloat32, MemoryCategory::kGradients);
  std::fill_n(t.data<float>(), t.numel(), 1.0f);
  comm.begin_step(ctx);
  comm.start_average(ctx, t);
  comm.wait_all(ctx);
  return 0;
}

int exit_early(Communicator& comm, Context& ctx) {
  Tensor t = ctx.allocate(Shape{1 << 18}, DType::kFloat32, MemoryCategory::kGradients);
  std::fill_n(t.data<float>(), t.numel(), 1.0f);
  if (comm.rank() == 1) {
    std::fflush(stdout);
    std::_Exit(3);  // no MPI_Finalize, no reduction: as a crash would
  }
  comm.begin_step(ctx);
  comm.start_average(ctx, t);
  comm.wait_all(ctx);
  return 0;
}

// Starts a 64 MiB reduction, then "computes" (sleeps) 500 ms without calling
// MPI (or calling progress() every 1 ms), then waits: the time wait_all takes
// afterwards is what the computing did not overlap.
int progress_check(Communicator& comm, Context& ctx) {
  Tensor t = ctx.allocate(Shape{1 << 24}, DType::kFloat32, MemoryCategory::kGradients);
  for (bool call_progress : {false, true}) {
    std::fill_n(t.data<float>(), t.numel(), 1.0f);
    comm.begin_step(ctx);
    comm.start_average(ctx, t);
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (call_progress) comm.progress();
    }
    const auto waited = std::chrono::steady_clock::now();
    comm.wait_all(ctx);
    const double wait_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - waited).count();
    std::printf("rank %d: 64 MiB all-reduce, 500 ms of work %s progress(): wait_all took %.1f ms after it\n",
                comm.rank(), call_progress ? "with" : "without", wait_ms);
  }
  return 0;
}

int run(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  Context ctx = Context::cpu();
  CommunicatorOptions options;
  if (which == "timeout" || which == "setup-timeout" || which == "exit-early" || which == "mismatched-collectives") {
    options.timeout_seconds = 2.0;
  }
  std::unique_ptr<Communicator> comm = make_communicator(ctx, options);
  if (which == "average") return average(*comm, ctx);
  if (which == "collectives") return collectives(*comm, ctx);
  if (which == "timeout") return timeout(*comm, ctx);
  if (which == "setup-timeout") return setup_timeout(*comm, ctx);
  if (which == "exit-early") return exit_early(*comm, ctx);
  if (which == "mismatched-collectives") return mismatched_collectives(*comm, ctx);
  if (which == "progress-check") return progress_check(*comm, ctx);
  throw ConfigError(cat("unknown case '", which,
                        "': average, collectives, timeout, setup-timeout, mismatched-collectives, exit-early, "
                        "progress-check"));
}

}  // namespace
}  // namespace glassbox

int main(int argc, char** argv) {
  return glassbox::run_program("communicator_driver", [&] { return glassbox::run(argc, argv); });
}
