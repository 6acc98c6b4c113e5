// bench/support/google_benchmark.h: Google Benchmark's own flags and its run,
// as every benchmark program here (bench_nets, bench_data, bench_gemm,
// bench_allreduce) takes and runs them.
//
// Google Benchmark 1.7.1 mishandles some of its flags: a bad
// --benchmark_format (or an empty --benchmark_color) prints its usage and
// exits 0, a bad number is reported as an "unrecognized flag", "flase" is
// yes, a flag given twice silently wins, a bad filter is only "no match",
// the environment (BENCHMARK_OUT=...) bypasses the command line, and
// --benchmark_out is written as the run goes (Note [Writing --benchmark_out
// ourselves]). So the programs check those flags first, name each problem in
// a ConfigError, and run through run_google_benchmarks.
//
//   GoogleBenchmarkFlags benchmark;
//   for (const std::string& arg : args) {
//     if (<one of the program's own>) ... else take_google_benchmark_flag(arg, benchmark);
//   }
//   if (!initialize_google_benchmark(argv[0], benchmark)) return kExitUsage;
//   add_context("folder", path);  // not benchmark::AddCustomContext: JSON holds UTF-8 only
//   <register>; const size_t ran = run_google_benchmarks("bench_gemm", benchmark);
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::bench {

// The Google Benchmark reporters offered (its CSV reporter is deprecated in
// 1.7.1 and left out).
enum class ReportFormat { kConsole, kJson };

struct GoogleBenchmarkFlags {
  ReportFormat display_format = ReportFormat::kConsole;  // --benchmark_format
  ReportFormat file_format = ReportFormat::kJson;        // --benchmark_out_format
  std::string out_path;         // --benchmark_out; "" when absent (written whole by run_google_benchmarks)
  std::string filter;           // --benchmark_filter as given; "" when absent
  bool user_min_time = false;   // --benchmark_min_time given: it wins over a program's default
  bool help = false;            // --help
  bool list_tests = false;      // --benchmark_list_tests: names listed, nothing run
  std::optional<bool> color;    // --benchmark_color=true|false; unset (auto): colour on a terminal
  // For Google Benchmark, in the order given: its flags, less --benchmark_out,
  // and any flag unknown to the program, which Google Benchmark then reports.
  std::vector<std::string> passed_on;
  // Every flag seen so far by name ("--benchmark_format"), the program's own
  // too (refuse_repeat): a flag given twice is refused.
  std::set<std::string, std::less<>> given;
};

// Throws ConfigError "<name> is given twice; give it once" when `name` is in
// flags.given already; else adds it.
void refuse_repeat(std::string_view name, GoogleBenchmarkFlags& flags);

// Takes one word that is not the program's own flag: --help (or -h), one of
// Google Benchmark's flags (checked where 1.7.1 would mishandle it: a flag
// that needs a value has one, a yes/no flag's value is one, a value is UTF-8,
// a filter compiles), or an unknown flag, passed on for Google Benchmark to
// report. Throws ConfigError.
void take_google_benchmark_flag(const std::string& arg, GoogleBenchmarkFlags& flags);

// Note [Filters match the printed names]: Google Benchmark matches
// --benchmark_filter against the registered name, which ends in /manual_time
// or /real_time (and /iterations:N where the count is fixed); the names
// printed and written leave those out (bench/support/plain_names.h). So an
// anchored filter copied from the output, '^GEMM/16x100x150$', would match
// nothing. Every end anchor '$' (not escaped, not in a bracket expression) is
// widened to allow those suffixes before the filter is passed on.
std::string plain_name_filter(std::string_view filter);

// A registered name without those suffixes: what the results call it.
std::string plain_name(std::string_view registered);

// Takes Google Benchmark's variables from the environment into `flags` as
// their flags (where the command line does not give them; then removed from
// the environment), then calls Google Benchmark's Initialize with the
// program's name, `default_min_time` ("--benchmark_min_time=2") unless the
// user gave one, and the flags passed on; then a --benchmark_out path is
// checked writable (ConfigError naming it). Returns false when Google
// Benchmark reported an unrecognized flag (the program exits kExitUsage).
// With --help, Google Benchmark prints its flags and exits 0.
bool initialize_google_benchmark(const char* program, GoogleBenchmarkFlags& flags,
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
