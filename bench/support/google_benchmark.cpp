// bench/support/google_benchmark.cpp
#include "bench/support/google_benchmark.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench/support/plain_names.h"
#include "bench/support/rank_reporting.h"
#include "optim/data_parallel_job.h"
#include "tensor/atomic_file.h"
#include "tensor/error.h"
#include "tensor/parse.h"

namespace glassbox::bench {
namespace {

// Note [Writing --benchmark_out ourselves]: Google Benchmark 1.7.1 opens the
// --benchmark_out file itself, exits 1 with only "invalid file name" when it
// cannot, and ignores write errors, so a full disk or a crash leaves a
// truncated JSON file. So the path is checked before anything runs, Google
// Benchmark gets /dev/null as the file (it insists on one when given a file
// reporter), that reporter writes into memory, and the file is written whole
// at the end (tensor/atomic_file.h).
constexpr const char* kDiscardedOut = "--benchmark_out=/dev/null";

}  // namespace

void add_context(std::string_view key, std::string_view value) {
  benchmark::AddCustomContext(std::string(key), utf8_or_escaped(value));
}

bool initialize_google_benchmark(const char* program, const GoogleBenchmarkFlags& flags,
                                 std::string_view default_min_time) {
  // Google Benchmark keeps pointers into its command line (the program's
  // name, for the results' context): the words live as long as the program.
  static std::vector<std::string> words;
  words = {utf8_or_escaped(program)};
  if (!flags.user_min_time && !default_min_time.empty()) words.emplace_back(default_min_time);
  words.insert(words.end(), flags.passed_on.begin(), flags.passed_on.end());
  if (!flags.out_path.empty()) words.emplace_back(kDiscardedOut);
  static std::vector<char*> pointers;
  pointers.clear();
  for (std::string& word : words) pointers.push_back(word.data());
  int count = static_cast<int>(pointers.size());
  benchmark::Initialize(&count, pointers.data());  // prints its help and exits on --help
  if (benchmark::ReportUnrecognizedArguments(count, pointers.data())) return false;
  if (!flags.out_path.empty()) {
    try {
      check_writable(flags.out_path);
    } catch (const Error& e) {
      throw ConfigError(cat("--benchmark_out: ", e.what()));
    }
  }
  return true;
}

size_t run_google_benchmarks(std::string_view program, const GoogleBenchmarkFlags& flags, bool speaks) {
  // Under mpirun each rank's stdout may be a pseudo-terminal: only the job's own counts.
  const bool color = flags.color.value_or(output_is_terminal(stdout, job_placement()));
  std::ostringstream file_contents;
  const auto display = speaks ? make_plain_name_reporter(flags.display_format, color) : make_silent_reporter();
  const auto file = flags.out_path.empty() || !speaks
                        ? nullptr
                        : make_plain_name_reporter(flags.file_format, false, &file_contents);
  // --benchmark_list_tests: Google Benchmark writes the registered names to
  // the display reporter's stream, every rank's; rank 0 prints them here,
  // under their plain names.
  std::ostringstream listed;
  if (flags.list_tests) display->SetOutputStream(&listed);
  const size_t ran = benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  if (flags.list_tests && speaks) {
    std::istringstream names(listed.str());
    for (std::string name; std::getline(names, name);) std::printf("%s\n", plain_name(name).c_str());
  }
  if (!speaks || flags.out_path.empty() || ran == 0) return ran;
  if (file_contents.str().empty()) {  // --benchmark_list_tests: nothing was run
    std::fprintf(stderr, "%.*s: no results, so %s was not written\n", static_cast<int>(program.size()),
                 program.data(), flags.out_path.c_str());
  } else {
    write_file_atomically(flags.out_path, file_contents.str());
  }
  return ran;
}

}  // namespace glassbox::bench
