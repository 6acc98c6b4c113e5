// bench/support/google_benchmark_flags.h: Google Benchmark's own flags as
// every benchmark program here takes them, checked where Google Benchmark
// 1.7.1 mishandles them: a bad --benchmark_format (or an empty
// --benchmark_color) prints its usage and exits 0, a bad number is reported
// as an "unrecognized flag", "flase" is yes, a flag given twice silently
// wins, a bad filter is only "no match", and the environment
// (BENCHMARK_OUT=...) bypasses the command line. Pure: no Google Benchmark
// here (tests/fuzz/fuzz_bench_flags.cpp); bench/support/google_benchmark.h
// runs it.
#pragma once

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

// Google Benchmark also reads each flag from the environment
// (BENCHMARK_FORMAT=json for --benchmark_format=json), where it would escape
// these checks and write --benchmark_out itself: each such variable is taken
// into `flags` as its flag, where the command line does not give that flag,
// and removed from the environment. Throws ConfigError naming the variable.
void take_google_benchmark_environment(GoogleBenchmarkFlags& flags);

}  // namespace glassbox::bench
