// bench/support/plain_names.h: result names as DESIGN.md gives them.
//
// Google Benchmark 1.7.1 appends "/manual_time" to the name of every manually
// timed benchmark, with no switch to turn it off, and "/iterations:N" to one
// whose iterations are fixed (bench_nets --steps, data-parallel rows). Our
// benchmarks are all manually timed (CUDA events), and their names are
// <Net>/<mode>/batch:<N>, so bench_nets prints and writes results through
// this wrapper, which clears those two fields and hands the runs to Google
// Benchmark's own reporter (each run still records its iterations).
#pragma once

#include <benchmark/benchmark.h>

#include "bench/support/bench_flags.h"

#include <memory>
#include <ostream>
#include <string_view>
#include <vector>

namespace glassbox::bench {

class PlainNameReporter final : public benchmark::BenchmarkReporter {
 public:
  // With `stream`, the inner reporter writes there, whatever stream Google
  // Benchmark hands this one (Note [Writing --benchmark_out ourselves]).
  explicit PlainNameReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner, std::ostream* stream = nullptr)
      : inner_(std::move(inner)), stream_(stream) {}

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  std::ostream* stream_;
};

// Google Benchmark's reporter for `format`, wrapped (writing to `stream` if given).
std::unique_ptr<benchmark::BenchmarkReporter> make_plain_name_reporter(ReportFormat format, bool color,
                                                                       std::ostream* stream = nullptr);

}  // namespace glassbox::bench
