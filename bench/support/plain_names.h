// bench/support/plain_names.h: result names as DESIGN.md gives them.
//
// Google Benchmark 1.7.1 appends "/manual_time" to the name of every manually
// timed benchmark, with no switch to turn it off, and "/iterations:N" to one
// whose iterations are fixed (bench_nets --steps, data-parallel rows). Our
// benchmarks are all manually timed (CUDA events), and their names are
// <Net>/<mode>/batch:<N>, so every benchmark program prints and writes
// results through this wrapper (bench/support/google_benchmark.h), which
// clears those two fields and hands the runs to Google Benchmark's own
// reporter (each run still records its iterations).
//
// Note [No NaN in the JSON]: with --benchmark_repetitions, Google Benchmark
// 1.7.1 gives each counter a coefficient of variation, stddev / mean, which is
// NaN for a counter that is 0 in every repetition (a "skipped" count), and its
// JSON reporter writes that as a bare NaN, which JSON does not have: strict
// readers (nlohmann::json, jq 1.6) refuse the whole file. For JSON the
// wrapper leaves out every counter whose value is not finite.
#pragma once

#include <benchmark/benchmark.h>

#include "bench/support/google_benchmark_flags.h"

#include <memory>
#include <ostream>
#include <string_view>
#include <vector>

namespace glassbox::bench {

class PlainNameReporter final : public benchmark::BenchmarkReporter {
 public:
  // With `stream`, the inner reporter writes there, whatever stream Google
  // Benchmark hands this one (Note [Writing --benchmark_out ourselves]).
  PlainNameReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner, bool finite_counters_only,
                    std::ostream* stream = nullptr)
      : inner_(std::move(inner)), finite_counters_only_(finite_counters_only), stream_(stream) {}

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  bool finite_counters_only_;  // Note [No NaN in the JSON]
  std::ostream* stream_;
};

// Google Benchmark's reporter for `format`, wrapped (writing to `stream` if given).
std::unique_ptr<benchmark::BenchmarkReporter> make_plain_name_reporter(ReportFormat format, bool color,
                                                                       std::ostream* stream = nullptr);

}  // namespace glassbox::bench
