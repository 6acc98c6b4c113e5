// bench/support/plain_names.cpp
#include "bench/support/plain_names.h"

#include <cmath>
#include <map>

namespace glassbox::bench {

bool PlainNameReporter::ReportContext(const Context& context) {
  // Google Benchmark points this wrapper at the console or the --benchmark_out
  // file before the first report: pass the streams on, unless we have our own.
  inner_->SetOutputStream(stream_ ? stream_ : &GetOutputStream());
  inner_->SetErrorStream(stream_ ? stream_ : &GetErrorStream());
  return inner_->ReportContext(context);
}

void PlainNameReporter::ReportRuns(const std::vector<Run>& runs) {
  std::vector<Run> renamed = runs;
  for (Run& run : renamed) {
    run.run_name.time_type.clear();
    run.run_name.iterations.clear();
    if (finite_counters_only_) {
      std::erase_if(run.counters, [](const auto& c) { return !std::isfinite(c.second.value); });
    }
  }
  inner_->ReportRuns(renamed);
}

std::unique_ptr<benchmark::BenchmarkReporter> make_plain_name_reporter(ReportFormat format, bool color,
                                                                       std::ostream* stream) {
  std::unique_ptr<benchmark::BenchmarkReporter> inner;
  if (format == ReportFormat::kJson) {
    inner = std::make_unique<benchmark::JSONReporter>();
  } else {
    inner = std::make_unique<benchmark::ConsoleReporter>(color ? benchmark::ConsoleReporter::OO_ColorTabular
                                                               : benchmark::ConsoleReporter::OO_Tabular);
  }
  return std::make_unique<PlainNameReporter>(std::move(inner), format == ReportFormat::kJson, stream);
}

}  // namespace glassbox::bench
