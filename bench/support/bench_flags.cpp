// bench/support/bench_flags.cpp
#include "bench/support/bench_flags.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "nets/registry.h"
#include "tensor/parse.h"

namespace glassbox::bench {
namespace {

constexpr std::string_view kOwnFlags[] = {"--device",       "--batch", "--net",     "--data",   "--workers",
                                          "--bucket-mb",    "--comm-timeout", "--steps", "--threads", "--warmup"};  // each takes =VALUE
constexpr std::string_view kOwnSwitches[] = {"--data-parallel", "--cuda-graph", "--fixed-threads", "--no-overlap"};

}  // namespace

BenchFlags parse_bench_flags(const std::vector<std::string>& args) {
  BenchFlags flags;
  for (const std::string& arg : args) {
    if (arg == "-h") {
      take_google_benchmark_flag(arg, flags.benchmark);
      continue;
    }
    if (!arg.starts_with("--")) {
      throw ConfigError(cat("unexpected argument '", arg, "': bench_nets takes only flags; choose networks with "
                                                         "--benchmark_filter=REGEX (e.g. --benchmark_filter=VGG16)"));
    }
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const std::string_view value = equals == std::string::npos ? std::string_view() : std::string_view(arg).substr(equals + 1);
    // The compile flags `glassbox` shares (graph/compile_flags.h), in bench_nets' --flag=value spelling.
    const std::vector<FlagSpec>& shared = compile_flags();
    const auto spec = std::find_if(shared.begin(), shared.end(), [&](const FlagSpec& f) { return f.name == name; });
    const bool compile_flag = spec != shared.end();
    if (!compile_flag && std::find(std::begin(kOwnFlags), std::end(kOwnFlags), name) == std::end(kOwnFlags) &&
        std::find(std::begin(kOwnSwitches), std::end(kOwnSwitches), name) == std::end(kOwnSwitches)) {
      take_google_benchmark_flag(arg, flags.benchmark);  // Google Benchmark's, or unknown: it reports those
      continue;
    }
    refuse_repeat(name, flags.benchmark);
    // Flags that take =VALUE: bench_nets' own, and the valued compile flags.
    const bool own = compile_flag ? !spec->value_name.empty()
                                  : std::find(std::begin(kOwnFlags), std::end(kOwnFlags), name) != std::end(kOwnFlags);
    if (own && equals == std::string::npos) {
      throw ConfigError(cat(name, " needs a value: ", name, "=VALUE (bench_nets' flags are written --flag=value)"));
    }
    if (own && value.empty()) throw ConfigError(cat(name, "= needs a value, got an empty one"));
    if (compile_flag) {
      if (!own && equals != std::string::npos) throw ConfigError(cat(name, " takes no value"));
      flags.compile_given[name] = std::string(value);
      continue;
    }

    if (name == "--device") {
      flags.device = value;
    } else if (name == "--batch") {
      flags.batch = static_cast<int>(parse_int("--batch", value, 1, kMaxInt));
    } else if (name == "--net") {
      try {
        flags.net = find_net(value).name;  // an MLP spec, or a registry name in any case
      } catch (const ConfigError& e) {
        throw ConfigError(cat("--net: ", e.what()));
      }
    } else if (name == "--data") {
      flags.data = value;  // opened for each network, which knows its input shape (data/data_spec.h)
    } else if (name == "--workers") {
      flags.workers = static_cast<int>(parse_int("--workers", value, 0, 1024));
    } else if (name == "--bucket-mb") {
      flags.bucket_mb = parse_number("--bucket-mb", value, 0.001, 1 << 20);
    } else if (name == "--comm-timeout") {
      flags.comm_timeout = parse_number("--comm-timeout", value, 0.001, 1e7);
    } else if (name == "--threads") {
      flags.threads = static_cast<int>(parse_int("--threads", value, 1, 1024));
    } else if (name == "--warmup") {
      flags.warmup = static_cast<int>(parse_int("--warmup", value, 0, 1'000'000));
    } else if (name == "--steps") {
      flags.steps = static_cast<int>(parse_int("--steps", value, 1, 1'000'000));
    } else if (name == "--data-parallel") {
      if (equals != std::string::npos) throw ConfigError("--data-parallel takes no value");
      flags.data_parallel = true;
    } else if (name == "--cuda-graph") {
      if (equals != std::string::npos) throw ConfigError("--cuda-graph takes no value");
      flags.cuda_graph = true;
    } else if (name == "--fixed-threads") {
      if (equals != std::string::npos) throw ConfigError("--fixed-threads takes no value");
      flags.fixed_threads = true;
    } else if (name == "--no-overlap") {
      if (equals != std::string::npos) throw ConfigError("--no-overlap takes no value");
      flags.overlap = false;
    }
  }
  take_google_benchmark_environment(flags.benchmark);  // BENCHMARK_OUT=... counts as --benchmark_out=...
  // The compile flags' checks see the output file too (an --autotune-cache that is also --benchmark_out).
  std::map<std::string, std::string> given = flags.compile_given;
  if (!flags.benchmark.out_path.empty()) given["--benchmark_out"] = flags.benchmark.out_path;
  flags.compile = compile_options_from_flags(given);
  return flags;
}

std::vector<std::string> idle_flag_notes(const BenchFlags& flags, int ranks) {
  std::vector<std::string> notes;
  if (flags.benchmark.given.contains("--workers") && flags.data.empty()) {
    notes.push_back("--workers sets the data loader's threads for --data; without it the steps read synthetic "
                    "batches, which need none");
  }
  if (ranks == 1 && !flags.data_parallel) {
    for (const char* flag : {"--bucket-mb", "--no-overlap", "--comm-timeout"}) {
      if (flags.benchmark.given.contains(flag)) {
        notes.push_back(cat(flag, " applies to the data-parallel step, under mpirun or with --data-parallel; this "
                                  "job is one process without it"));
      }
    }
  }
  if (flags.benchmark.user_min_time && flags.steps > 0) {
    notes.push_back("--benchmark_min_time has no effect beside --steps, which fixes every benchmark's timed steps");
  }
  return notes;
}

}  // namespace glassbox::bench
