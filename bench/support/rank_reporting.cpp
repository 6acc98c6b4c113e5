// bench/support/rank_reporting.cpp
#include "bench/support/rank_reporting.h"

namespace glassbox::bench {
namespace {

class SilentReporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

std::unique_ptr<benchmark::BenchmarkReporter> make_silent_reporter() { return std::make_unique<SilentReporter>(); }

}  // namespace glassbox::bench
