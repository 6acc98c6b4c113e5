// bench/bench_allreduce.cpp: the all-reduce of data-parallel training
// (optim/communicator.h), timed per size, with Google Benchmark.
//
//   mpirun -np 2 build/bench_allreduce --device=cpu
//   mpirun -np 8 build/bench_allreduce --device=cuda      # one rank per GPU
//   build/bench_allreduce                                  # a job of one
//
// Names are allreduce/<backend>/ranks:<N>/bytes:<B>. Each timed iteration is
// begin_step, start_average of the whole buffer, wait_all: on the host clock,
// since wait_all returns only once the mean is in place (on CUDA it polls the
// done event). Counters, nccl-tests' definitions: algbw = bytes / time, busbw
// = algbw * 2(n-1)/n (what each rank's link carries in a ring all-reduce; 0
// for a job of one, where nothing moves), both in GB/s (10^9 bytes), and ranks.
// Sizes: 4 KiB to 1 GiB in powers of 4; on the CPU up to 256 MiB unless
// --max-bytes says otherwise (docs/data_parallel.md, section bench_allreduce).
// Only rank 0 prints; every rank runs the same benchmarks the same number of
// times (Note [Fixed step counts across ranks]).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>


#include "bench/support/google_benchmark.h"
#include "optim/communicator.h"
#include "tensor/copy.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/entry_point.h"

namespace glassbox::bench {
namespace {

constexpr int64_t kMinBytes = int64_t{4} << 10;
constexpr int64_t kMaxBytes = int64_t{1} << 30;
constexpr int64_t kCpuMaxBytes = int64_t{256} << 20;  // 1 GiB: seconds per reduction on a small CPU
constexpr int kWarmup = 2;

// About 256 MiB reduced per benchmark, at least 5 and at most 1000
// iterations, from the size alone: the same on every rank (Note [Fixed step
// counts across ranks], bench/support/rank_reporting.h).
int64_t iterations_for(int64_t bytes) { return std::clamp<int64_t>((int64_t{256} << 20) / bytes, 5, 1000); }

bool g_failed = false;

void run_allreduce(benchmark::State& state, Communicator& comm, Context& ctx, int64_t bytes) {
  try {
    Tensor data = ctx.allocate(Shape{bytes / 4}, DType::kFloat32, MemoryCategory::kGradients);
    fill_zero(ctx, data);  // the mean of zeros stays zero, iteration after iteration
    auto reduce = [&] {
      comm.begin_step(ctx);
      comm.start_average(ctx, data);
      comm.wait_all(ctx);
    };
    for (int i = 0; i < kWarmup; ++i) reduce();
    double seconds = 0.0;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      reduce();
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      state.SetIterationTime(elapsed);
      seconds += elapsed;
    }
    const double mean = seconds / static_cast<double>(state.iterations());
    const double n = comm.size();
    const double algbw = static_cast<double>(bytes) / mean / 1e9;
    state.counters["algbw_GB/s"] = algbw;
    state.counters["busbw_GB/s"] = algbw * 2.0 * (n - 1.0) / n;
    state.counters["ranks"] = n;
  } catch (const std::exception& e) {
    // A failed collective leaves the other ranks waiting: end the job (the
    // entry point would, but Google Benchmark would go on to the next size).
    std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
    g_failed = true;
    if (comm.size() > 1) abort_job(kExitFailure);
    state.SkipWithError(e.what());
  }
}

int run(int argc, char** argv) {
  std::string device_flag;
  int64_t max_bytes = 0;
  GoogleBenchmarkFlags benchmark_flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string name = arg.substr(0, arg.find('='));
    if (name != "--device" && name != "--max-bytes") {
      take_google_benchmark_flag(arg, benchmark_flags);
      continue;
    }
    refuse_repeat(name, benchmark_flags);
    if (arg.starts_with("--device=")) {
      device_flag = arg.substr(9);
    } else if (arg.starts_with("--max-bytes=")) {
      max_bytes = parse_int("--max-bytes", arg.substr(12), kMinBytes, kMaxBytes);
    } else {
      throw ConfigError(cat(name, " needs a value: ", name, "=VALUE"));
    }
  }
  take_google_benchmark_environment(benchmark_flags);
  if (benchmark_flags.help) {
    std::printf("bench_allreduce [--device=cpu|cuda|cuda:N] [--max-bytes=B] [Google Benchmark flags]\n"
                "Times the all-reduce of data-parallel training per size, 4 KiB to --max-bytes (default 1 GiB on a\n"
                "GPU, 256 MiB on the CPU) in powers of 4; under mpirun -np R, one rank per device.\n\n");
    return initialize_google_benchmark(argv[0], benchmark_flags) ? 0 : kExitUsage;  // prints its flags, exits
  }
  const DeviceChoice choice = choose_device(device_flag, "--device");
  Context ctx = Context::on(choice.device);
  std::unique_ptr<Communicator> comm = make_communicator(ctx);
  const bool printing = comm->rank() == 0;
  // Only rank 0 writes --benchmark_out: the others need not reach its folder.
  if (!printing) benchmark_flags.out_path.clear();
  if (!initialize_google_benchmark(argv[0], benchmark_flags)) return kExitUsage;
  if (printing && !choice.note.empty()) std::fprintf(stderr, "bench_allreduce: %s\n", choice.note.c_str());

  const RuntimeInfo info = runtime_info(ctx);
  for (const auto& [key, value] : info.fields()) add_context(key, value);
  add_context("communicator", cat(comm->backend(), ", ", comm->size(), " ranks"));
  add_context("protocol", "2 warm-up all-reduces per size, then a fixed count (256 MiB / size, "
                                          "5 to 1000) timed on the host clock, each begin_step + start_average + "
                                          "wait_all; algbw = bytes/time, busbw = algbw*2(n-1)/n, GB/s = 1e9 B/s");
  if (max_bytes == 0) max_bytes = ctx.is_cuda() ? kMaxBytes : kCpuMaxBytes;
  for (int64_t bytes = kMinBytes; bytes <= max_bytes; bytes *= 4) {
    const std::string name = cat("allreduce/", comm->backend(), "/ranks:", comm->size(), "/bytes:", bytes);
    benchmark::RegisterBenchmark(name.c_str(), [&comm, &ctx, bytes](benchmark::State& state) {
      run_allreduce(state, *comm, ctx, bytes);
    })->UseManualTime()->Iterations(iterations_for(bytes))->Unit(benchmark::kMicrosecond);
  }
  // Only rank 0 shows the results and writes --benchmark_out.
  const size_t ran = run_google_benchmarks("bench_allreduce", benchmark_flags, printing);
  benchmark::Shutdown();
  if (ran == 0) {
    throw ConfigError(cat("no benchmark matches --benchmark_filter='", excerpt(benchmark_flags.filter, 200),
                          "'; the benchmarks: allreduce/", comm->backend(), "/ranks:", comm->size(),
                          "/bytes:B for B = ",
                          kMinBytes, ", 4 times that, ... up to ", max_bytes));
  }
  return g_failed ? kExitFailure : 0;
}

}  // namespace
}  // namespace glassbox::bench

int main(int argc, char** argv) {
  return glassbox::run_program("bench_allreduce", [&] { return glassbox::bench::run(argc, argv); });
}
