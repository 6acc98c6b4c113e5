// bench/bench_nets.cpp: forward, forward+backward and full training steps of
// the classic networks, timed with Google Benchmark.
//
//   build/bench_nets --benchmark_filter=VGG16
//   build/bench_nets --device=cpu --benchmark_filter='AlexNet/train_step' --benchmark_out=r.json
//
// Names are <Net>/<mode>/batch:<N>[/tf32]. Protocol (DESIGN.md section 5): the
// network is built, compiled and its inputs filled once, untimed; each mode
// runs 10 warm-up steps; then every step is timed on its own (CUDA events on
// the GPU, the steady clock on the CPU) and fed to Google Benchmark as manual
// time. Counters: images/s and TFLOP/s (analytic: 2 x MACs forward, 3x that
// with backward) from the mean step time, and peak device memory.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/support/net_session.h"
#include "bench/support/plain_names.h"
#include "bench/support/sgemm_reference.h"
#include "tensor/event_timer.h"
#include "tensor/runtime_info.h"

namespace glassbox::bench {
namespace {

constexpr int kWarmupSteps = 10;
// Each benchmark keeps timing steps for at least this long, unless the user
// passes --benchmark_min_time: Google Benchmark's 0.5 s would time a single
// 1.4 s VGG16 step on the CPU, and one step on a shared machine is noise.
// Given as a flag, not per benchmark, since Google Benchmark would add
// "/min_time:2.000" to the names.
constexpr const char* kDefaultMinTime = "--benchmark_min_time=2";

struct Settings {
  Device device;
  std::string display_format = "console";  // Google Benchmark's --benchmark_format
  std::string file_format = "json";        // --benchmark_out_format
  bool writes_file = false;                // --benchmark_out given
  bool user_min_time = false;              // --benchmark_min_time given: it wins
  int batch = 0;  // 0: each network's default for the device
  Precision precision = Precision::kFp32;
  AlgoSearch algo_search = AlgoSearch::kHeuristic;
};

bool g_any_benchmark_failed = false;

void run_network(benchmark::State& state, const NetSpec& net, StepMode mode, const SessionKey& key,
                 const Settings& settings) {
  try {
    CompileOptions options;
    options.precision = key.precision;
    options.layers.algo_search = settings.algo_search;
    NetSession& session = cached_session(net, key, options);
    if (!session.warmed_up(mode)) {
      for (int i = 0; i < kWarmupSteps; ++i) session.step(mode);
      session.ctx().synchronize();
      session.mark_warmed_up(mode);
    }
    EventTimer timer(session.ctx(), 2);
    double seconds = 0.0;
    for (auto _ : state) {
      timer.record(0);
      session.step(mode);
      timer.record(1);
      const double elapsed = timer.elapsed_ms(0, 1) / 1e3;  // waits for this step only
      state.SetIterationTime(elapsed);
      seconds += elapsed;
    }
    const double mean = seconds / static_cast<double>(state.iterations());
    const double flops = flop_multiplier(mode) * 2.0 * static_cast<double>(session.graph().macs());
    state.counters["images/s"] = key.batch / mean;
    state.counters["TFLOP/s"] = flops / mean / 1e12;
    state.counters["peak_memory"] = benchmark::Counter(static_cast<double>(session.ctx().memory().peak_total),
                                                       benchmark::Counter::kDefaults, benchmark::Counter::OneK::kIs1024);
  } catch (const std::exception& e) {
    g_any_benchmark_failed = true;
    state.SkipWithError(e.what());
  }
}

void register_benchmarks(const Settings& s) {
  const std::string suffix = s.precision == Precision::kTf32 ? "/tf32" : "";
  for (const NetSpec& net : all_nets()) {
    const int batch = s.batch > 0 ? s.batch : net.default_batch(s.device);
    const SessionKey key{net.name, batch, s.device, s.precision};
    for (StepMode mode : {StepMode::kForward, StepMode::kForwardBackward, StepMode::kTrainStep}) {
      const std::string name = cat(net.name, "/", name_of(mode), "/batch:", batch, suffix);
      benchmark::RegisterBenchmark(name.c_str(), [&net, mode, key, s](benchmark::State& state) {
        run_network(state, net, mode, key, s);
      })->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
  // The yardstick for the same run: what a large float32 GEMM reaches here.
  if (s.device.is_cuda()) {
#if GLASSBOX_WITH_CUDA
    benchmark::RegisterBenchmark(cat("SGEMM/cublas/n:8192", suffix).c_str(), [s](benchmark::State& state) {
      try {
        sgemm_cublas(state, 8192, s.precision);
      } catch (const std::exception& e) {
        g_any_benchmark_failed = true;
        state.SkipWithError(e.what());
      }
    })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
  } else {
    benchmark::RegisterBenchmark("SGEMM/eigen/n:2048", [](benchmark::State& state) { sgemm_eigen(state, 2048); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_nets: %s\n", message.c_str());
  std::exit(2);
}

// Takes Glassbox's own flags out of argv, leaving Google Benchmark's.
Settings parse_own_flags(int& argc, char** argv) {
  Settings s;
  std::string device;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t length = std::strlen(flag);
      return arg.compare(0, length, flag) == 0 ? argv[i] + length : nullptr;
    };
    if (const char* v = value("--device=")) {
      device = v;
    } else if (const char* v = value("--batch=")) {
      s.batch = std::atoi(v);
      if (s.batch <= 0) usage_error(cat("--batch must be a positive integer, got '", v, "'"));
    } else if (const char* v = value("--precision=")) {
      try {
        s.precision = parse_precision(v);
      } catch (const Error& e) {
        usage_error(e.what());
      }
    } else if (arg == "--cudnn-search") {
      s.algo_search = AlgoSearch::kMeasured;
    } else if (const char* v = value("--benchmark_format=")) {
      s.display_format = v;  // read here, and left for Google Benchmark too
      argv[kept++] = argv[i];
    } else if (const char* v = value("--benchmark_out_format=")) {
      s.file_format = v;
      argv[kept++] = argv[i];
    } else if (value("--benchmark_min_time=")) {
      s.user_min_time = true;
      argv[kept++] = argv[i];
    } else if (value("--benchmark_out=")) {
      s.writes_file = true;
      argv[kept++] = argv[i];
    } else if (arg == "--help") {
      std::printf(
          "bench_nets [--device=cpu|cuda|cuda:N] [--batch=N] [--precision=fp32|tf32] [--cudnn-search]\n"
          "           [Google Benchmark flags: --benchmark_filter=REGEX --benchmark_out=FILE ...]\n"
          "Networks: %s. Modes: forward, forward_backward, train_step.\n"
          "Default device: the GPU when one works, else the CPU (with smaller batches).\n\n",
          net_names().c_str());
      argv[kept++] = argv[i];  // Google Benchmark prints its flags too
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;

  const CudaAvailability cuda = cuda_availability();
  if (device.empty()) {
    s.device = cuda.usable ? Device::cuda(0) : Device::cpu();
    if (!cuda.usable) {
      std::fprintf(stderr, "bench_nets: no usable GPU (%s): running on the CPU with CPU batch sizes\n",
                   cuda.reason.c_str());
    }
  } else {
    try {
      s.device = Device::parse(device);
    } catch (const Error& e) {
      usage_error(e.what());
    }
    if (s.device.is_cuda() && !cuda.usable) usage_error(cat("--device=", device, ": no usable GPU (", cuda.reason, ")"));
  }
  return s;
}

}  // namespace
}  // namespace glassbox::bench

int main(int argc, char** argv) {
  using namespace glassbox;
  const bench::Settings settings = bench::parse_own_flags(argc, argv);
  std::vector<char*> args(argv, argv + argc);
  std::string min_time = bench::kDefaultMinTime;
  if (!settings.user_min_time) args.insert(args.begin() + 1, min_time.data());
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

  try {
    Context ctx = Context::on(settings.device);
    ctx.set_precision(settings.precision);
    const RuntimeInfo info = runtime_info(ctx);
    std::fprintf(stderr, "bench_nets: device %s (%s), %s\n", info.device.c_str(), info.device_name.c_str(),
                 info.precision.c_str());
    for (const auto& [key, value] : info.fields()) benchmark::AddCustomContext(key, value);
    benchmark::AddCustomContext("protocol", "10 warm-up steps per mode, then each step timed (CUDA events on "
                                            "the GPU, steady clock on the CPU) for at least 2 s unless "
                                            "--benchmark_min_time says otherwise; counters from the mean step");
    bench::register_benchmarks(settings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nets: %s\n", e.what());
    return 1;
  }

  std::unique_ptr<benchmark::BenchmarkReporter> display, file;
  try {
    display = bench::make_plain_name_reporter(settings.display_format, isatty(fileno(stdout)) != 0);
    if (settings.writes_file) file = bench::make_plain_name_reporter(settings.file_format, false);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_nets: %s\n", e.what());
    return 2;
  }
  const size_t ran = benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  bench::release_cached_session();
  benchmark::Shutdown();
  if (ran == 0) {
    std::fprintf(stderr, "bench_nets: no benchmark matches --benchmark_filter='%s'; networks: %s; modes: "
                 "forward, forward_backward, train_step\n", benchmark::GetBenchmarkFilter().c_str(),
                 net_names().c_str());
    return 2;
  }
  return bench::g_any_benchmark_failed ? 1 : 0;
}
