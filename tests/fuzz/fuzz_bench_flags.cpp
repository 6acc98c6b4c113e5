// tests/fuzz/fuzz_bench_flags.cpp: bench_nets' command line
// (bench/support/bench_flags.h), then the device choice bench_nets makes from
// it. Input: NUL-separated words, the arguments after the program name
// (tests/fuzz/fuzz_input.h).
//
// Invariants of an accepted command line: what bench_nets later relies on
// without checking again (a known output format, a batch that is 0 or
// positive, --benchmark_out never passed on to Google Benchmark).
#include "bench/support/bench_flags.h"
#include "tensor/context.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> words = fuzz::split_words(data, size);
  fuzz::expect_errors([&] {
    const bench::BenchFlags flags = bench::parse_bench_flags(words);
    FUZZ_CHECK(flags.batch >= 0);
    FUZZ_CHECK(flags.benchmark.display_format == bench::ReportFormat::kConsole ||
               flags.benchmark.display_format == bench::ReportFormat::kJson);
    FUZZ_CHECK(flags.benchmark.file_format == bench::ReportFormat::kConsole ||
               flags.benchmark.file_format == bench::ReportFormat::kJson);
    FUZZ_CHECK(flags.benchmark.passed_on.size() <= words.size());
    for (const std::string& word : flags.benchmark.passed_on) FUZZ_CHECK(!word.starts_with("--benchmark_out="));
    FUZZ_CHECK(!choose_device(flags.device, "--device").device.is_cuda());  // a CPU-only build
  });
  return 0;
}
