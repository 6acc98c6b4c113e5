// bench/support/rank_reporting.h: Google Benchmark in a job of several ranks
// (bench_nets and bench_allreduce under mpirun).
//
// Note [Fixed step counts across ranks]: Google Benchmark picks a benchmark's
// iteration count from how long a trial run takes, which differs from rank
// to rank; ranks that ran different numbers of all-reduces would leave one
// waiting forever for a collective the others never start. In a job of
// several ranks every benchmark that communicates therefore runs a count
// fixed in advance (->Iterations), the same on every rank: bench_nets'
// --steps=, bench_allreduce's count from the size.
//
// Every rank runs every benchmark; only rank 0 reports. The others hand
// Google Benchmark a reporter that prints nothing.
#pragma once

#include <benchmark/benchmark.h>

#include <memory>

namespace glassbox::bench {

std::unique_ptr<benchmark::BenchmarkReporter> make_silent_reporter();

}  // namespace glassbox::bench
