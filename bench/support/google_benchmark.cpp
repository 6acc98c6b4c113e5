// bench/support/google_benchmark.cpp
#include "bench/support/google_benchmark.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "bench/support/plain_names.h"
#include "bench/support/rank_reporting.h"
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

// The suffixes Google Benchmark 1.7.1 appends to a registered name, in its order.
constexpr std::string_view kNameSuffixes = "(/iterations:[0-9]+)?(/(manual|real|process)_time)?$";

ReportFormat parse_format(std::string_view flag, std::string_view value) {
  if (value == "console") return ReportFormat::kConsole;
  if (value == "json") return ReportFormat::kJson;
  throw ConfigError(cat(flag, ": unknown format '", excerpt(value), "'; valid: console, json"));
}

}  // namespace

void refuse_repeat(std::string_view name, GoogleBenchmarkFlags& flags) {
  if (!flags.given.emplace(name).second) throw ConfigError(cat(name, " is given twice; give it once"));
}

std::string plain_name_filter(std::string_view filter) {
  std::string widened;
  for (size_t i = 0; i < filter.size(); ++i) {
    const char c = filter[i];
    if (c == '\\' && i + 1 < filter.size()) {  // an escaped character, '\$' a literal dollar
      widened += filter.substr(i, 2);
      ++i;
    } else if (c == '[') {  // a bracket expression, copied whole: '$' is literal in it
      size_t end = i + 1;
      if (end < filter.size() && filter[end] == '^') ++end;
      if (end < filter.size() && filter[end] == ']') ++end;  // a leading ']' is literal
      while (end < filter.size() && filter[end] != ']') {
        // "[:digit:]", "[.-.]", "[=a=]" inside: up to their own closing pair.
        const bool inner_open = filter[end] == '[' && end + 1 < filter.size() &&
                                (filter[end + 1] == ':' || filter[end + 1] == '.' || filter[end + 1] == '=');
        if (inner_open) {
          const size_t close = filter.find(std::string{filter[end + 1], ']'}, end + 2);
          end = close == std::string_view::npos ? filter.size() : close + 2;
        } else {
          ++end;
        }
      }
      end = std::min(end + 1, filter.size());
      widened += filter.substr(i, end - i);
      i = end - 1;
    } else if (c == '$') {
      widened += kNameSuffixes;
    } else {
      widened += c;
    }
  }
  return widened;
}

void take_google_benchmark_flag(const std::string& arg, GoogleBenchmarkFlags& flags) {
  const size_t equals = arg.find('=');
  const std::string name = arg.substr(0, equals);
  const std::string_view value = equals == std::string::npos ? std::string_view() : std::string_view(arg).substr(equals + 1);
  refuse_repeat(name == "-h" ? "--help" : name, flags);
  if (name == "--help" || name == "-h") {
    flags.help = true;
    flags.passed_on.emplace_back("--help");  // Google Benchmark prints its flags and exits
  } else if (name == "--benchmark_out") {
    if (value.empty()) throw ConfigError("--benchmark_out= needs a file name");
    flags.out_path = value;
  } else if (name == "--benchmark_filter") {
    flags.filter = value;
    flags.passed_on.push_back(cat(name, "=", plain_name_filter(value)));
  } else if (name == "--benchmark_min_time" || name == "--benchmark_min_warmup_time") {
    // Note [Minimum time with a unit]: Google Benchmark from 1.8 spells a
    // minimum time "0.5s" (or "100x", a count of iterations); Debian's 1.7
    // reads only a bare number of seconds, and rejects the unit. Both
    // spellings of seconds are taken here, and passed on bare.
    if (value.ends_with('x')) {
      throw ConfigError(cat(name, "=", value, ": a count of iterations is not a minimum time here; give seconds (",
                            name, "=0.5s or ", name, "=0.5)"));
    }
    const std::string seconds(value.ends_with('s') ? value.substr(0, value.size() - 1) : value);
    parse_number(name, seconds, 0.0, 1e6);
    flags.user_min_time = flags.user_min_time || name == "--benchmark_min_time";
    flags.passed_on.push_back(cat(name, "=", seconds));
  } else {
    if (name == "--benchmark_format") {
      flags.display_format = parse_format(name, value);
    } else if (name == "--benchmark_out_format") {
      flags.file_format = parse_format(name, value);
    } else if (name == "--benchmark_repetitions") {
      parse_int(name, value, 1, 1'000'000);
    } else if (name == "--benchmark_time_unit" && value != "ns" && value != "us" && value != "ms" && value != "s") {
      throw ConfigError(cat(name, ": unknown unit '", excerpt(value), "'; valid: ns, us, ms, s"));
    }
    flags.passed_on.push_back(arg);  // Google Benchmark's own, or unknown: it reports those
  }
}

bool initialize_google_benchmark(const char* program, const GoogleBenchmarkFlags& flags,
                                 std::string_view default_min_time) {
  // Google Benchmark keeps pointers into its command line (the program's
  // name, for the results' context): the words live as long as the program.
  static std::vector<std::string> words;
  words = {program};
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

size_t run_google_benchmarks(std::string_view program, const GoogleBenchmarkFlags& flags, bool color, bool speaks) {
  std::ostringstream file_contents;
  const auto display = speaks ? make_plain_name_reporter(flags.display_format, color) : make_silent_reporter();
  const auto file = flags.out_path.empty() || !speaks
                        ? nullptr
                        : make_plain_name_reporter(flags.file_format, false, &file_contents);
  const size_t ran = benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
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
