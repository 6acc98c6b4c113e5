// bench/support/google_benchmark_flags.cpp
#include "bench/support/google_benchmark_flags.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include <stdlib.h>  // unsetenv (POSIX)

#include "tensor/error.h"
#include "tensor/parse.h"

namespace glassbox::bench {
namespace {

// The suffixes Google Benchmark 1.7.1 appends to a registered name, in its order.
constexpr std::string_view kNameSuffixes = "(/iterations:[0-9]+)?(/(manual|real|process)_time)?$";

// Google Benchmark 1.7.1's flags that need a value, and those that are yes
// or no (a value optional: the flag alone is yes). It reads anything it
// does not take for no as yes ("flase" too), and an empty --benchmark_color
// prints its usage and exits 0.
constexpr std::string_view kValueFlags[] = {
    "--benchmark_filter",   "--benchmark_min_time", "--benchmark_min_warmup_time", "--benchmark_repetitions",
    "--benchmark_format",   "--benchmark_out",      "--benchmark_out_format",      "--benchmark_time_unit",
    "--benchmark_context",  "--benchmark_color",    "--benchmark_perf_counters"};
constexpr std::string_view kYesNoFlags[] = {"--benchmark_list_tests", "--benchmark_enable_random_interleaving",
                                            "--benchmark_report_aggregates_only",
                                            "--benchmark_display_aggregates_only", "--benchmark_counters_tabular"};

// Longer filters overflow the stack of std::regex's compiler (about 20,000
// characters of "aaa..." end the process), and no filter needs this many.
constexpr size_t kMaxFilterLength = 1000;

// Any case, as Google Benchmark reads them ("True" from a Python script).
std::optional<bool> yes_no(std::string_view value) {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const std::string_view yes : {"true", "yes", "on", "1", "t", "y"}) {
    if (lower == yes) return true;
  }
  for (const std::string_view no : {"false", "no", "off", "0", "f", "n"}) {
    if (lower == no) return false;
  }
  return std::nullopt;
}

// The filter as Google Benchmark gets it, widened (Note [Filters match the
// printed names]) and compiled here first, as it will compile it (POSIX
// extended, a leading '-' negating the rest): a bad one is a usage error
// naming it, not "no benchmark matches".
std::string checked_filter(std::string_view filter) {
  if (filter.size() > kMaxFilterLength) {
    throw ConfigError(cat("--benchmark_filter is ", filter.size(), " characters long; at most ", kMaxFilterLength,
                          " are taken"));
  }
  const std::string widened = plain_name_filter(filter);
  try {
    const std::regex compiled(filter.starts_with('-') ? widened.substr(1) : widened, std::regex::extended);
  } catch (const std::regex_error& e) {
    throw ConfigError(cat("--benchmark_filter='", excerpt(filter, 80), "' is not a regular expression (POSIX "
                          "extended, as Google Benchmark reads it): ", e.what()));
  }
  return widened;
}

ReportFormat parse_format(std::string_view flag, std::string_view value) {
  if (value == "console") return ReportFormat::kConsole;
  if (value == "json") return ReportFormat::kJson;
  throw ConfigError(cat(flag, ": unknown format '", excerpt(value), "'; valid: console, json"));
}

}  // namespace

std::string plain_name(std::string_view registered) {
  static const std::regex suffixes(std::string(kNameSuffixes), std::regex::extended);
  return std::regex_replace(std::string(registered), suffixes, "");
}

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
  const std::string_view value =
      equals == std::string::npos ? std::string_view() : std::string_view(arg).substr(equals + 1);
  refuse_repeat(name == "-h" ? "--help" : name, flags);
  if (name == "--help" || name == "-h") {
    flags.help = true;
    flags.passed_on.emplace_back("--help");  // Google Benchmark prints its flags and exits
    return;
  }
  const bool valued = std::find(std::begin(kValueFlags), std::end(kValueFlags), name) != std::end(kValueFlags);
  // An empty filter is Google Benchmark's "all"; every other value flag needs one.
  if (valued && (equals == std::string::npos || (value.empty() && name != "--benchmark_filter"))) {
    throw ConfigError(cat(name, " needs a value: ", name, "=VALUE"));
  }
  // A path is any bytes, and --benchmark_out is not written into the results.
  if (name != "--benchmark_out" && first_non_utf8(value) != std::string_view::npos) {
    throw ConfigError(cat(name, "=", excerpt(value), ": not UTF-8 text, which the results (JSON) must be"));
  }
  if (std::find(std::begin(kYesNoFlags), std::end(kYesNoFlags), name) != std::end(kYesNoFlags)) {
    const std::optional<bool> yes = equals == std::string::npos ? true : yes_no(value);
    if (!yes) throw ConfigError(cat(name, "=", excerpt(value), ": give true or false (or yes, no, on, off, 1, 0)"));
    if (name == "--benchmark_list_tests") flags.list_tests = *yes;
    flags.passed_on.push_back(arg);
  } else if (name == "--benchmark_color") {  // the reporters are ours: whether they colour is decided here
    if (value != "auto") {
      const std::optional<bool> color = yes_no(value);
      if (!color) throw ConfigError(cat(name, "=", excerpt(value), ": give auto, true or false"));
      flags.color = *color;
    }
  } else if (name == "--benchmark_out") {
    flags.out_path = value;
  } else if (name == "--benchmark_filter") {
    flags.filter = value;
    flags.passed_on.push_back(cat(name, "=", checked_filter(value)));
  } else if (name == "--benchmark_min_time" || name == "--benchmark_min_warmup_time") {
    // Note [Minimum time with a unit]: Google Benchmark from 1.8 spells a
    // minimum time "0.5s" (or "100x", a count of iterations); Debian's 1.7
    // reads only a bare number of seconds, and rejects the unit. Both
    // spellings of seconds are taken here, and passed on bare.
    if (value.ends_with('x')) {
      throw ConfigError(cat(name, "=", excerpt(value), ": a count of iterations is not a minimum time here; give ",
                            "seconds (", name, "=0.5s or ", name, "=0.5)"));
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
    // Google Benchmark's flags are --benchmark_* and --v; it reports an
    // unknown one of those itself. Any other is no flag of the program's.
    if (!name.starts_with("--benchmark_") && name != "--v") {
      throw ConfigError(cat("unknown flag '", excerpt(name), "'; --help lists the flags"));
    }
    flags.passed_on.push_back(arg);  // Google Benchmark's own, or unknown: it reports those
  }
}

void take_google_benchmark_environment(GoogleBenchmarkFlags& flags) {
  std::vector<std::string_view> names(std::begin(kValueFlags), std::end(kValueFlags));
  names.insert(names.end(), std::begin(kYesNoFlags), std::end(kYesNoFlags));
  for (const std::string_view name : names) {
    std::string variable;
    for (const char c : name.substr(2)) variable += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    const std::string arg = cat(name, "=", value);
    ::unsetenv(variable.c_str());
    if (flags.given.contains(name)) continue;  // the command line wins
    try {
      take_google_benchmark_flag(arg, flags);
    } catch (const ConfigError& e) {
      throw ConfigError(cat("the environment's ", variable, ": ", e.what()));
    }
  }
}

}  // namespace glassbox::bench
