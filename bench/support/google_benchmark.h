// bench/support/google_benchmark.h: Google Benchmark's own flags and its run,
// as every benchmark program here (bench_nets, bench_data, bench_gemm,
// bench_allreduce) takes and runs them.
//
// Google Benchmark 1.7.1 mishandles some of its flags (checked first:
// bench/support/google_benchmark_flags.h) and writes --benchmark_out as the
// run goes (Note [Writing --benchmark_out ourselves]). So the programs name
// each problem in a ConfigError, and run through run_google_benchmarks.
//
//   GoogleBenchmarkFlags benchmark;
//   for (const std::string& arg : args) {
//     if (<one of the program's own>) ... else take_google_benchmark_flag(arg, benchmark);
//   }
//   take_google_benchmark_environment(benchmark);  // before the program's own checks of them
//   if (!initialize_google_benchmark(argv[0], benchmark)) return kExitUsage;
//   add_context("folder", path);  // not benchmark::AddCustomContext: JSON holds UTF-8 only
//   <register>; const size_t ran = run_google_benchmarks("bench_gemm", benchmark);
#pragma once

#include <cstddef>
#include <string_view>

#include "bench/support/google_benchmark_flags.h"

namespace glassbox::bench {

// Calls Google Benchmark's Initialize with the
// program's name, `default_min_time` ("--benchmark_min_time=2") unless the
// user gave one, and the flags passed on; then a --benchmark_out path is
// checked writable (ConfigError naming it). Returns false when Google
// Benchmark reported an unrecognized flag (the program exits kExitUsage).
// With --help, Google Benchmark prints its flags and exits 0.
bool initialize_google_benchmark(const char* program, const GoogleBenchmarkFlags& flags,
                                 std::string_view default_min_time = "");

// benchmark::AddCustomContext with a value that is not UTF-8 (a path) escaped
// as excerpt() escapes bytes: the results' JSON holds UTF-8 text only.
void add_context(std::string_view key, std::string_view value);

// Runs the registered benchmarks, the results under their plain names: shown
// on stdout when `speaks` (rank 0; in colour on a terminal, or as
// --benchmark_color says), and written to --benchmark_out whole at the end
// (never half a file). Returns how many ran; 0 when the filter matched none
// (the caller says which there are).
size_t run_google_benchmarks(std::string_view program, const GoogleBenchmarkFlags& flags, bool speaks = true);

}  // namespace glassbox::bench
