// bench/bench_nets.cpp: forward, forward+backward, full training steps and
// inference of the classic networks, timed with Google Benchmark.
//
//   build/bench_nets --benchmark_filter=VGG16
//   build/bench_nets --device=cpu --benchmark_filter='AlexNet/train_step' --benchmark_out=r.json
//
// Names are <Net>/<mode>/batch:<N>[/tf32][/deterministic]: a flag that changes
// what is computed or which algorithms may run is in the name, so that
// bench/compare.py, which matches by name, never pairs a restricted run with an
// unrestricted one (Note [Benchmark names]). Protocol (DESIGN.md section 5): the
// network is built, compiled and its inputs filled once, untimed; each mode
// runs 10 warm-up steps (--warmup=N: N); then every step is timed on its own (CUDA events on
// the GPU, the steady clock on the CPU) and fed to Google Benchmark as manual
// time. inference runs on its own graph, compiled for inference only (no
// gradients, nothing kept for backward). Counters: images/s (a language
// model's: tokens/s, B x T per step) and TFLOP/s
// (analytic: 2 x MACs forward, 3x that with backward) from the mean step time,
// peak device memory over the timed steps (peak_memory) and by category
// (mem_*: the optimizer's state exists only in train_step), and the loss of
// the first and last timed step. Every step's loss is checked: one that is not
// finite ends that benchmark with an error naming the step, and the exit code is 1.
// With --data=SPEC, each network's train_step is also timed on real data
// (<Net>/train_step/batch:<N>/real_data): each timed step then includes the
// host's wait for the next batch and queuing its copy, reported apart as
// data_wait_ms, beside compute_ms and data_share.
//
// Under mpirun (one process per GPU, or per CPU share: docs/data_parallel.md)
// each network's train_step is also timed data-parallel,
// <Net>/train_step/batch:<N>/ranks:<R>, beside the same step of each rank
// alone; rank 0 reports (bench/support/data_parallel_counters.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include <omp.h>

#include "bench/support/bench_flags.h"
#include "bench/support/google_benchmark.h"
#include "bench/support/data_parallel_counters.h"
#include "bench/support/machine_counters.h"
#include "bench/support/net_session.h"
#include "bench/support/sgemm_reference.h"
#include "optim/data_parallel_job.h"
#include "tensor/machine_load.h"
#include "tensor/cpu_blas.h"
#include "tensor/event_timer.h"
#include "tensor/runtime_info.h"
#include "tools/entry_point.h"

namespace glassbox::bench {
namespace {

// Each benchmark keeps timing steps for at least this long, unless the user
// passes --benchmark_min_time: Google Benchmark's 0.5 s would time a single
// 1.4 s VGG16 step on the CPU, and one step on a shared machine is noise.
// Given as a flag, not per benchmark, since Google Benchmark would add
// "/min_time:2.000" to the names.
constexpr const char* kDefaultMinTime = "--benchmark_min_time=2";

// What the benchmarks run with, from the flags (bench/support/bench_flags.h).
struct Settings {
  Device device;
  int batch = 0;  // 0: each network's default for the device
  std::string net;  // "": every network in the registry
  std::string data;  // --data: also time train_step on this real data
  int workers = 0;   // --workers: its loader's threads
  // The compile flags' choices (graph/compile_flags.h): precision,
  // algorithm search, determinism, the CPU's convolution path and layouts, NVTX.
  CompileOptions compile;
  Communicator* communicator = nullptr;  // a job of several ranks (mpirun); null for one process
  GradientSyncOptions sync;
  int steps = 0;  // timed steps of every benchmark; 0: Google Benchmark decides
  int warmup = 10;  // untimed steps of each mode first (--warmup)
  bool cuda_graph = false;  // --cuda-graph: steps replayed as a CUDA graph (optim/step_replay.h)
};

bool g_any_benchmark_failed = false;

// peak_memory, and the same peak by category (bytes, in binary units).
void add_memory_counters(benchmark::State& state, const MemoryStats& memory) {
  auto bytes = [](int64_t value) {
    return benchmark::Counter(static_cast<double>(value), benchmark::Counter::kDefaults,
                              benchmark::Counter::OneK::kIs1024);
  };
  state.counters["peak_memory"] = bytes(memory.peak_total);
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    std::string name = cat("mem_", name_of(static_cast<MemoryCategory>(c)));
    std::replace(name.begin(), name.end(), ' ', '_');
    state.counters[name] = bytes(memory.peak[static_cast<size_t>(c)]);
  }
}

void run_network(benchmark::State& state, const NetSpec& net, StepMode mode, const SessionKey& key,
                 const Settings& settings, bool data_parallel = false) {
  try {
    CompileOptions options = settings.compile;
    options.precision = key.precision;
    NetSession& session = cached_session(net, key, options, settings.cuda_graph);
    session.begin(mode);
    session.set_data_parallel(data_parallel ? settings.communicator : nullptr, settings.sync);
    DataParallelCounters split;
    const bool real_data = !key.data.empty();
    if (!session.warmed_up(mode) || data_parallel) {  // the first all-reduces set up connections: warm them too
      for (int i = 0; i < settings.warmup; ++i) {
        if (real_data) session.next_real_batch(settings.workers);
        session.step(mode);
        session.checked_loss(mode);  // a step whose loss is not finite ends the benchmark, named
      }
      if (!data_parallel) session.mark_warmed_up(mode);
    }
    // The peak over the timed steps: compile, algorithm search and warm-up
    // are behind us (what the PyTorch peer's max_memory_allocated measures).
    session.ctx().allocator().reset_peak();
    EventTimer timer(session.ctx(), 2);
    const MachineSample machine_start = sample_machine(session.ctx());
    double seconds = 0.0, data_seconds = 0.0;
    float first_loss = 0.0f, last_loss = 0.0f;
    bool first = true;
    for (auto _ : state) {
      // Real data: the host's wait for the batch (and queuing its copy) is
      // part of the step; on the synthetic batch there is none.
      const double data = real_data ? session.next_real_batch(settings.workers) : 0.0;
      timer.record(0);
      session.step(mode);
      timer.record(1);
      const double elapsed = data + timer.elapsed_ms(0, 1) / 1e3;  // waits for this step only
      state.SetIterationTime(elapsed);
      seconds += elapsed;
      data_seconds += data;
      last_loss = session.checked_loss(mode);
      if (first) first_loss = last_loss;
      first = false;
      if (data_parallel) split.add(session.sync()->last_times());
    }
    const double mean = seconds / static_cast<double>(state.iterations());
    const double flops = flop_multiplier(mode) * 2.0 * static_cast<double>(session.graph().macs());
    state.counters[cat(net.item_name(), "/s")] = static_cast<double>(key.batch * net.items_per_sample()) / mean;
    if (data_parallel) {
      split.report(state, *session.sync(), key.net, key.batch, mean);
      session.set_data_parallel(nullptr, settings.sync);
    } else if (mode == StepMode::kTrainStep && settings.communicator != nullptr && !real_data) {
      remember_rank_alone(key.net, key.batch, mean);  // the baseline of the data-parallel run
    }
    if (real_data) {  // the seed studies' real-against-synthetic comparison
      const double steps = static_cast<double>(state.iterations());
      state.counters["data_wait_ms"] = data_seconds / steps * 1e3;
      state.counters["compute_ms"] = (seconds - data_seconds) / steps * 1e3;
      state.counters["data_share"] = data_seconds / seconds;
    }
    // Data-parallel: every rank computed its step in that time.
    const double ranks = data_parallel ? settings.communicator->size() : 1;
    state.counters["TFLOP/s"] = ranks * flops / mean / 1e12;
    // So that two runs can be checked to have computed the same thing.
    state.counters["first_loss"] = first_loss;
    state.counters["last_loss"] = last_loss;
    if (const ReplayCounts* replay = session.replay_counts()) {  // --cuda-graph: what one launch replays
      state.counters["graph_nodes"] = static_cast<double>(replay->nodes);
      state.counters["graph_captures"] = static_cast<double>(replay->captures);
    }
    add_memory_counters(state, session.ctx().memory());
    add_machine_counters(state, machine_start, sample_machine(session.ctx()),
                         static_cast<int64_t>(state.iterations()) * key.batch);
  } catch (const std::exception& e) {
    // In a job of several ranks, the others would wait for this one at the
    // next all-reduce: the whole job ends, with this error (tools/entry_point.h).
    if (settings.communicator != nullptr && settings.communicator->size() > 1) throw;
    g_any_benchmark_failed = true;
    state.SkipWithError(e.what());
  }
}

// Note [Benchmark names]: --deterministic restricts cuDNN to the algorithms it
// reports deterministic, which can be slower: a different measurement, so a
// different name, like tf32's (the PyTorch peer runs neither). Named on the CPU
// too, where it changes nothing, so that a name always says what was asked
// for. --cudnn-search is not in the name: it only looks harder for the
// fastest of the same algorithms, and the peer searches too (cudnn.benchmark).
// Nor are --cpu-conv and --no-winograd (in the context instead): they choose
// among CPU kernels that compute the same convolution, as cuDNN's choice
// among its algorithms (Winograd among them) is not in a name either.
void register_benchmarks(const Settings& s) {
  const std::string suffix = cat(s.compile.precision == Precision::kFp32 ? "" : cat("/", flag_name_of(s.compile.precision)),
                                 s.compile.layers.deterministic ? "/deterministic" : "",
                                 s.cuda_graph ? "/cuda_graph" : "");
  // An MLP spec is not in all_nets() (there is one per size list), and Google
  // Benchmark cannot register names from a --benchmark_filter regex: --net
  // names the one network to register.
  const std::vector<NetSpec> nets = s.net.empty() ? all_nets() : std::vector<NetSpec>{find_net(s.net)};
  for (const NetSpec& net : nets) {
    const int batch = s.batch > 0 ? s.batch : net.default_batch(s.device);
    for (StepMode mode : {StepMode::kForward, StepMode::kForwardBackward, StepMode::kTrainStep, StepMode::kInference}) {
      const SessionKey key{net.name, batch, s.device, s.compile.precision, plan_for(mode)};
      const std::string name = cat(net.name, "/", name_of(mode), "/batch:", batch, suffix);
      auto* plain = benchmark::RegisterBenchmark(name.c_str(), [net, mode, key, s](benchmark::State& state) {
        run_network(state, net, mode, key, s);
      });
      plain->UseManualTime()->Unit(benchmark::kMillisecond);
      if (s.steps > 0) plain->Iterations(s.steps);
      if (mode == StepMode::kTrainStep && s.communicator != nullptr) {  // beside each rank alone
        const std::string ranks = cat(name, "/ranks:", s.communicator->size());
        benchmark::RegisterBenchmark(ranks.c_str(), [net, mode, key, s](benchmark::State& state) {
          run_network(state, net, mode, key, s, /*data_parallel=*/true);
        })->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(s.steps);
      }
      // Beside the synthetic run of the same step; --data names images, which
      // the language models do not read (glassbox train LSTM --data text:PATH does).
      if (mode == StepMode::kTrainStep && !s.data.empty() && !net.language_model) {
        SessionKey real = key;
        real.data = s.data;
        auto* real_run =
            benchmark::RegisterBenchmark(cat(name, "/real_data").c_str(), [net, mode, real, s](benchmark::State& state) {
              run_network(state, net, mode, real, s);
            });
        real_run->UseManualTime()->Unit(benchmark::kMillisecond);
        if (s.steps > 0) real_run->Iterations(s.steps);
      }
    }
  }
  // The yardstick for the same run: what a large float32 GEMM reaches here.
  if (s.device.is_cuda()) {
#if GLASSBOX_WITH_CUDA
    benchmark::internal::Benchmark* sgemm =
        benchmark::RegisterBenchmark(cat("SGEMM/cublas/n:8192", suffix).c_str(), [s](benchmark::State& state) {
          try {
            sgemm_cublas(state, 8192, s.compile.precision);
          } catch (const std::exception& e) {
            g_any_benchmark_failed = true;
            state.SkipWithError(e.what());
          }
        })->UseManualTime()->Unit(benchmark::kMillisecond);
    if (s.steps > 0) sgemm->Iterations(s.steps);  // --steps: every benchmark's timed steps
#endif
  } else {
    // "SGEMM/openblas/n:2048" or "SGEMM/eigen/n:2048": the kernels behind Eigen's products here.
    std::string kernels = cpu_gemm_name();
    std::transform(kernels.begin(), kernels.end(), kernels.begin(), [](unsigned char c) { return std::tolower(c); });
    benchmark::internal::Benchmark* sgemm =
        benchmark::RegisterBenchmark(cat("SGEMM/", kernels, "/n:2048").c_str(),
                                     [](benchmark::State& state) { sgemm_eigen(state, 2048); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    if (s.steps > 0) sgemm->Iterations(s.steps);  // --steps: every benchmark's timed steps
  }
}

void print_help() {
  std::printf(
      "bench_nets [--device=cpu|cuda|cuda:N] [--batch=N] [--net=NAME] [--precision=fp32|tf32|bf16|fp16] [--cudnn-search]\n"
      "           [--cudnn-api=auto|legacy|graph] [--cpu-conv=auto|glassbox|onednn] [--no-winograd] [--deterministic] [--no-nvtx] [--data=SPEC [--workers=N]]\n"
      "           [--layout=auto|nchw|nhwc] [--no-fusion]\n"
      "           [--threads=N] [--fixed-threads] [--warmup=N] [--steps=N] [--cuda-graph]\n"
      "           [under mpirun: --bucket-mb=X --no-overlap --comm-timeout=S] [--data-parallel]\n"
      "           [Google Benchmark flags: --benchmark_filter=REGEX --benchmark_out=FILE ...]\n"
      "--data=folder:PATH (or fashion-mnist, ...): also time each train_step on that real data, named\n"
      "<Net>/train_step/batch:<N>/real_data, with counters data_wait_ms, compute_ms and data_share.\n"
      "--no-nvtx: no NVTX range per layer and pass (a GPU build pushes them for Nsight Systems).\n"
      "--cudnn-api=API: whose convolution candidates the GPU chooses among: auto (--cudnn-search times cuDNN's\n"
      "legacy algorithms and its graph API's engine configurations together; heuristics pick a legacy\n"
      "algorithm), legacy or graph. --autotune-cache=FILE (with --cudnn-search): keep what the search timed in\n"
      "FILE for later runs on the same GPU and cuDNN.\n"
      "--cpu-conv=PATH: what runs the CPU's convolutions: auto (oneDNN above 1x1 and stride-1 1x1 forwards where built with it),\n"
      "glassbox (its own im2col + GEMM) or onednn; in the context as cpu_conv.\n"
      "--layout=L: the values' order: auto (NHWC on the CPU, and on a GPU in tf32, bf16 and fp16), nchw or nhwc\n"
      "(where the layers can); in the context as layout. --no-fusion: every ReLU and residual add runs itself, to\n"
      "compare with their fusion into the layer before (docs/fusion.md); in the context as fusion.\n"
      "--no-winograd: only direct convolutions on the CPU (by default Winograd runs the 3x3 stride-1 layers\n"
      "where it measured faster: oneDNN's kernels on AVX-512, else Glassbox's on NHWC values); in the context\n"
      "as cpu_winograd.\n"
      "--threads=N: OpenMP threads of every CPU kernel (default: OMP_NUM_THREADS, else one per core), in the\n"
      "context as cpu_threads. At start bench_nets watches the cores for a quarter of a second and runs one\n"
      "thread fewer for each core's worth of other processes' work (in the context as cpu_threads_fit);\n"
      "--fixed-threads keeps N. Each row's other_cpus counter is that work over its timed steps (none for a row\n"
      "under 0.25 s, too short for /proc/stat's ticks).\n"
      "--warmup=N: untimed steps of each mode before the timed ones (default 10; in the context as protocol).\n"
      "--steps=N: timed steps of every benchmark (default: as many as fill 2 s, as Google Benchmark decides; under\n"
      "mpirun 20); in the context as protocol.\n"
      "--cuda-graph: on a GPU, each step after the first warm-up step is captured once into a CUDA graph and\n"
      "replayed as one launch (not under mpirun); names end in /cuda_graph.\n"
      "--deterministic: only cuDNN algorithms that give the same bits on every run (%s); the CPU path\n"
      "always does, so there it changes nothing but the names, which end in /deterministic.\n"
      "Networks: %s; --net=MLP:<features>,<hidden>,...,<classes> for any MLP.\n"
      "Modes: forward, forward_backward, train_step, inference.\n"
      "Under mpirun -np R, train_step is also timed data-parallel (<Net>/train_step/batch:<N>/ranks:<R>), each\n"
      "benchmark runs --steps=N timed steps (default 20) on every rank, and rank 0 reports. --data-parallel times\n"
      "that step in a job of one too (on a GPU: NCCL with one rank, the cost of the path itself).\n"
      "Default device: the GPU when one works, else the CPU (with smaller batches).\n\n",
      kDeterministicByDefault ? "on: built with GLASSBOX_DETERMINISTIC" : "off by default", net_names().c_str());
}

// Under mpirun every rank must run the same benchmarks with the same steps:
// a rank with another batch, network, filter or step count would start
// all-reduces no other rank joins, or report a global batch that is not one.
// The ranks compare their command lines, every word but those that may
// differ by rank (--device: cuda:N; --benchmark_out: rank 0 writes it;
// --comm-timeout and the thread flags), sorted, so that the order of the
// flags does not count; where they differ, every rank stops naming both.
void check_same_command(Communicator& communicator, int argc, char** argv) {
  if (communicator.size() == 1) return;
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const std::string name = word.substr(0, word.find('='));
    if (name == "--device" || name == "--benchmark_out" || name == "--benchmark_out_format" ||
        name == "--comm-timeout" || name == "--threads" || name == "--fixed-threads") {
      continue;
    }
    words.push_back(word);
  }
  std::sort(words.begin(), words.end());
  std::string mine;
  for (const std::string& word : words) mine += cat(mine.empty() ? "" : " ", word);
  const std::vector<std::string> all = communicator.all_gather(mine);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    auto shown = [](const std::string& command) {
      return command.empty() ? std::string("no flags") : excerpt(command, 200);
    };
    throw ConfigError(cat("ranks disagree on the benchmarks: rank 0 has ", shown(all[0]), "; rank ", r, " has ",
                          shown(all[r]), " (every rank must run the same benchmarks with the same steps)"));
  }
}

int run(int argc, char** argv) {
  BenchFlags flags = parse_bench_flags(std::vector<std::string>(argv + 1, argv + argc));
  if (flags.benchmark.help) print_help();
  if (!initialize_google_benchmark(argv[0], flags.benchmark, kDefaultMinTime)) return kExitUsage;

  Settings settings{.batch = flags.batch, .net = flags.net, .data = flags.data, .workers = flags.workers,
                    .compile = flags.compile};
  settings.warmup = flags.warmup;
  settings.cuda_graph = flags.cuda_graph;
  const JobPlacement placement = job_placement();
  const bool speaks = placement.rank == 0;  // in a job of several ranks, rank 0 reports
  const DeviceChoice choice = choose_device(flags.device, "--device");
  settings.device = device_for_rank(choice.device, flags.device, placement, cuda_availability().device_count);
  // A thread count asked for wins over the share of the cores a rank gets.
  if (flags.threads > 0) omp_set_num_threads(flags.threads);
  if (flags.threads == 0) share_cpu_cores(settings.device, placement);
  if (!choice.note.empty() && speaks) {
    std::fprintf(stderr, "bench_nets: %s with CPU batch sizes\n", choice.note.c_str());
  }
  // Note [Threads on a shared machine]: before any network is compiled.
  const std::string fit = fit_measuring_threads(!settings.device.is_cuda(), flags.fixed_threads);
  if (!fit.empty() && speaks) std::fprintf(stderr, "bench_nets: %s\n", fit.c_str());
  const int threads = omp_get_max_threads();
  for (const std::string& note : compile_flag_notes(flags.compile_given, settings.device)) {
    if (speaks) std::fprintf(stderr, "bench_nets: %s\n", note.c_str());
  }
  for (const std::string& note : idle_flag_notes(flags, placement.size)) {
    if (speaks) std::fprintf(stderr, "bench_nets: %s\n", note.c_str());
  }

  Context ctx = Context::on(settings.device);
  ctx.set_precision(settings.compile.precision);
  const std::unique_ptr<Communicator> communicator = make_communicator(ctx, {.timeout_seconds = flags.comm_timeout});
  if ((communicator->size() > 1 || flags.data_parallel) && flags.cuda_graph) {
    throw ConfigError("--cuda-graph replays the steps of one process; a data-parallel step waits on the host "
                      "between its all-reduce buckets and is not replayed (run without mpirun or --data-parallel)");
  }
  if (flags.cuda_graph && !settings.device.is_cuda()) {
    throw ConfigError(cat("--cuda-graph needs a CUDA device: a step is replayed as a CUDA graph; the device is ",
                          settings.device.str()));
  }
  check_same_command(*communicator, argc, argv);
  if (communicator->size() > 1 || flags.data_parallel) {
    settings.communicator = communicator.get();
    settings.sync = {.bucket_bytes = static_cast<size_t>(flags.bucket_mb * (1 << 20)), .overlap = flags.overlap};
    settings.steps = flags.steps > 0 ? flags.steps : kDataParallelSteps;
    add_job_context(*communicator, settings.sync, settings.steps, threads);
  } else {
    settings.steps = flags.steps;
  }
  const RuntimeInfo info = runtime_info(ctx);
  if (speaks) {
    std::fprintf(stderr, "bench_nets: device %s (%s), %s\n", info.device.c_str(), info.device_name.c_str(),
                 info.precision.c_str());
  }
  for (const auto& [key, value] : info.fields()) add_context(key, value);
  add_context("cpu_threads_fit", flags.fixed_threads ? "the threads asked for (--fixed-threads)"
                                                 : fit.empty()       ? "the threads asked for"
                                                                     : fit);
  add_context("deterministic", settings.compile.layers.deterministic ? "yes" : "no");
  add_context("cudnn_api", std::string(name_of(settings.compile.layers.cudnn_api)));  // --cudnn-api
  add_context("cpu_conv_path", std::string(name_of(settings.compile.layers.cpu_conv)));  // --cpu-conv
  add_context("cpu_winograd", settings.compile.layers.cpu_winograd ? "on" : "off");  // --no-winograd
  const bool nhwc = plans_channels_last(settings.compile.layout, settings.device, settings.compile.precision);
  add_context("layout", cat(nhwc ? "NHWC where the layers can" : "NCHW", " (--layout ",
                                            name_of(settings.compile.layout), ")"));
  add_context("fusion", settings.compile.fusion ? "a ReLU runs in the layer before it where it can"
                                                               : "off (--no-fusion)");
  add_context("cuda_graph", settings.cuda_graph
                                                ? "on: after one eager warm-up step, each step is one CUDA graph launch"
                                                : "off (each kernel launched by the host)");
  add_machine_context(sample_machine(ctx));
  const std::string how_many = settings.steps > 0
                                   ? cat(settings.steps, " steps (--steps)")
                                   : std::string("at least 2 s unless --benchmark_min_time says otherwise");
  add_context("protocol", cat(settings.warmup, " warm-up steps per mode, then each step timed (CUDA "
                                              "events on the GPU, steady clock on the CPU) for ", how_many,
                                              "; counters from the mean step; every step's loss checked to be "
                                              "finite"));
  register_benchmarks(settings);

  const size_t ran = run_google_benchmarks("bench_nets", flags.benchmark, speaks);
  release_cached_session();
  benchmark::Shutdown();
  if (ran == 0) {
    throw ConfigError(cat("no benchmark matches --benchmark_filter='", excerpt(flags.benchmark.filter, 200),
                          "'; networks: ", net_names(), "; modes: forward, forward_backward, train_step, inference"));
  }
  return g_any_benchmark_failed ? kExitFailure : 0;
}

}  // namespace
}  // namespace glassbox::bench

int main(int argc, char** argv) {
  return glassbox::run_program("bench_nets", [&] { return glassbox::bench::run(argc, argv); });
}
