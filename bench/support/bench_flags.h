// bench/support/bench_flags.h: bench_nets' command line, checked before
// anything runs.
//
// Glassbox's own flags (--device=, --batch=, --net=, --data=, --workers=,
// --warmup=, ..., and the compile flags that `glassbox` shares: --precision=,
// --cudnn-search, --cpu-conv=, --no-winograd, --layout=, --deterministic,
// --no-nvtx) are taken out and parsed; Google Benchmark's are checked and
// passed on (bench/support/google_benchmark.h). Every problem is a
// ConfigError naming the flag and the value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench/support/google_benchmark_flags.h"
#include "graph/compile_flags.h"
#include "layers/layer.h"
#include "tensor/context.h"

namespace glassbox::bench {

struct BenchFlags {
  std::string device;  // --device= as given; "" for the default (tensor/context.h choose_device)
  int batch = 0;       // --batch=; 0: each network's default for the device
  std::string net;     // --net=: only this network (a registry name or an MLP spec); "" for every registered one
  // --data=: real data (data/data_spec.h) for an extra train_step benchmark
  // per network, "<Net>/train_step/batch:<N>/real_data", beside the synthetic one.
  std::string data;
  int workers = 0;  // --workers=: the data loader's threads; 0: one per core
  int threads = 0;  // --threads=: OpenMP threads of every CPU kernel; 0: OMP_NUM_THREADS or one per core
  // --fixed-threads: run `threads` even beside other processes' work (Note
  // [Threads on a shared machine], tensor/machine_load.h); without it, one
  // thread fewer for each core's worth of their work, chosen at start.
  bool fixed_threads = false;
  int warmup = 10;  // --warmup=: untimed steps of each mode before the timed ones (DESIGN.md section 5: 10)
  // The compile flags every program shares (graph/compile_flags.h), as given
  // (--precision=tf32 -> "tf32", a switch -> ""), and what they choose.
  std::map<std::string, std::string> compile_given;
  CompileOptions compile;
  // Data-parallel runs under mpirun (optim/gradient_sync.h): --bucket-mb=,
  // --no-overlap, --comm-timeout= (seconds), and --steps=, the timed steps
  // of every benchmark (each rank must run as many: Note [Fixed step counts across ranks]).
  double bucket_mb = 25.0;
  bool overlap = true;
  double comm_timeout = 300.0;
  int steps = 0;  // 0: 20 in a job of several ranks; Google Benchmark decides in a job of one
  // --data-parallel: the data-parallel train_step even in a job of one (on a
  // GPU, NCCL with one rank: what the path costs against no communicator).
  // --cuda-graph: each step after the first is one CUDA graph launch (Note
  // [Replaying a step], optim/step_replay.h); benchmark names end in /cuda_graph.
  bool cuda_graph = false;
  bool data_parallel = false;
  // Google Benchmark's flags (--help, --benchmark_*), checked, and every flag
  // given by name, Glassbox's and Google Benchmark's.
  GoogleBenchmarkFlags benchmark;
};

// Parses the arguments after the program name, and Google Benchmark's
// BENCHMARK_* variables (take_google_benchmark_environment). Throws ConfigError.
BenchFlags parse_bench_flags(const std::vector<std::string>& args);

// A note for each flag given that this run leaves without effect: --workers
// without --data, the data-parallel flags in a job of one process without
// --data-parallel, --benchmark_min_time beside --steps. Never silent.
std::vector<std::string> idle_flag_notes(const BenchFlags& flags, int ranks);

}  // namespace glassbox::bench
