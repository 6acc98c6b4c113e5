// bench/bench_data.cpp: how fast one worker prepares samples from a folder of
// JPEGs: Dataset::load (data/image_folder.h) to 3x224x224, ImageNet's recipe.
//
//   build/bench_data --folder=PATH            PATH/<class>/*.jpg (for a make-folder output: PATH/train)
//   build/bench_data --folder=PATH --benchmark_filter=evaluation --benchmark_out=d.json
//
// Names: ImageFolder/load/3x224x224/training (decode DCT-scaled, resize to
// a shorter side of 256, random 224 window, flip, normalise) and
// .../evaluation (the central window). One thread: the figure is per worker,
// the Loader's throughput with W workers is at most W times it; that is
// ImageFolder/loader/3x224x224/training/workers:W (--workers=1,2 by
// default): the Loader handing batches of 32 to CPU tensors. Each timed
// iteration loads the next file (cycling through the folder), its rng seeded
// by its index, as the Loader does. Files are read once before timing, so the
// page cache holds them: this measures decoding and preparation, not the disk.
// Counter: images/s, from the wall time (UseRealTime), as the peer measures
// it: on a busy machine it drops while CPU time does not.
// bench/peers/pytorch_data.py times the same files through PIL and
// torchvision with the same names.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/support/google_benchmark.h"
#include "data/image_folder.h"
#include "data/loader.h"
#include "tensor/atomic_file.h"
#include "tensor/parse.h"
#include "tensor/context.h"
#include "tensor/grouped.h"
#include "tensor/runtime_info.h"
#include "tools/entry_point.h"

namespace glassbox::bench {
namespace {

bool g_any_benchmark_failed = false;

void run_load(benchmark::State& state, const ImageFolder& data, SampleMode mode) {
  std::vector<float> pixels(static_cast<size_t>(data.sample_shape().numel()));
  int64_t index = 0, skipped = 0;
  std::string first_error;
  for (auto _ : state) {
    std::mt19937_64 rng(static_cast<uint64_t>(index));
    try {
      benchmark::DoNotOptimize(data.load(index, pixels, mode, rng));
    } catch (const SampleError& e) {
      if (skipped++ == 0) first_error = e.what();
    }
    benchmark::ClobberMemory();
    index = (index + 1) % data.size();
  }
  // Google Benchmark's first trials run a few iterations, from the first
  // file: only a run that tried every file and loaded none is a failure.
  const auto iterations = static_cast<int64_t>(state.iterations());
  if (skipped == iterations && iterations >= data.size()) {
    g_any_benchmark_failed = true;
    state.SkipWithError(("every file failed to load, the first: " + first_error).c_str());
    return;
  }
  // images/s counts the images prepared: a file that fails fails fast, and
  // counted it would raise the rate.
  state.counters["images/s"] =
      benchmark::Counter(static_cast<double>(iterations - skipped), benchmark::Counter::kIsRate);
  if (skipped > 0) state.counters["skipped"] = static_cast<double>(skipped);
}

// The whole pipeline, as training runs it: a Loader with `workers` threads
// handing batches of kLoaderBatch training samples to a CPU context's
// tensors, epoch after epoch. images/s counts the samples handed out over
// the wall time of next() calls, the wait for the workers included.
constexpr int kLoaderBatch = 32;

void run_loader(benchmark::State& state, const std::shared_ptr<const ImageFolder>& data, int workers) {
  Context ctx = Context::cpu();
  const Shape sample = data->sample_shape();
  const Tensor images = ctx.allocate(Shape{kLoaderBatch, sample[0], sample[1], sample[2]}, DType::kFloat32,
                                     MemoryCategory::kData);
  const Tensor labels = ctx.allocate(Shape{kLoaderBatch}, DType::kInt32, MemoryCategory::kData);
  Loader loader(ctx, data, {.batch = kLoaderBatch, .workers = workers, .seed = 1, .shuffle = true,
                            .mode = SampleMode::kTraining, .drop_last = true});
  int epoch = 0;
  loader.start_epoch(epoch);
  auto next = [&] {
    if (loader.next(images, labels) == 0) {
      loader.start_epoch(++epoch);
      loader.next(images, labels);
    }
  };
  // A loader that fails (every sample of an epoch unreadable) fails this
  // benchmark, named, and the others still run.
  try {
    next();  // the workers' first batch: thread start-up is not what is measured
    for (auto _ : state) next();
  } catch (const Error& e) {
    g_any_benchmark_failed = true;
    state.SkipWithError(e.what());
    return;
  }
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * kLoaderBatch,
                                                  benchmark::Counter::kIsRate);
  state.counters["skipped"] = static_cast<double>(loader.stats().skipped);
}

// Reads every file once (untimed), so that the timed loads find them in the
// page cache, as load() reads them (a pipe or device named *.jpg is refused,
// not waited on); returns their mean size in bytes, and names on stderr the
// files that cannot be read, which the benchmarks count as skipped.
double warm_page_cache(const ImageFolder& data) {
  double bytes = 0.0;
  std::string contents, reason, first;
  int64_t unreadable = 0;
  for (int64_t i = 0; i < data.size(); ++i) {
    if (data.read_bytes(i, contents, reason)) {
      bytes += static_cast<double>(contents.size());
    } else if (unreadable++ == 0) {
      first = cat(utf8_or_escaped(data.path(i)), ": ", reason);
    }
  }
  if (unreadable > 0) {
    std::fprintf(stderr, "bench_data: %s of %s files cannot be read, counted as skipped; the first: %s\n",
                 grouped(unreadable).c_str(), grouped(data.size()).c_str(), first.c_str());
  }
  return bytes / static_cast<double>(data.size());
}

int run(int argc, char** argv) {
  std::string folder;
  std::vector<int> workers = {1, 2};
  GoogleBenchmarkFlags benchmark_flags;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const std::string name = word.substr(0, word.find('='));
    if (name != "--folder" && name != "--workers") {
      if (name == "--help" || name == "-h") {
        std::printf("bench_data --folder=PATH [--workers=1,2] [Google Benchmark flags]\n"
                    "PATH/<class>/*.jpg, e.g. the train/ folder that `glassbox make-folder --synthetic --out DIR` "
                    "writes.\n\n");
      }
      take_google_benchmark_flag(word, benchmark_flags);
      continue;
    }
    refuse_repeat(name, benchmark_flags);
    if (word.starts_with("--folder=")) {
      folder = word.substr(std::strlen("--folder="));
    } else if (word.starts_with("--workers=")) {
      workers.clear();
      const std::string_view text = std::string_view(word).substr(std::strlen("--workers="));
      if (text.empty()) throw ConfigError("--workers= needs a list of worker counts, e.g. --workers=1,2");
      for (const int64_t count : parse_growing_ints("--workers", text, 1, 256, "worker counts")) {
        workers.push_back(static_cast<int>(count));
      }
    } else {
      throw ConfigError(cat(name, " needs a value: ", name, "=VALUE"));
    }
  }
  take_google_benchmark_environment(benchmark_flags);
  if (!initialize_google_benchmark(argv[0], benchmark_flags)) return kExitUsage;
  if (folder.empty()) {
    throw ConfigError("--folder=PATH is required: a folder of JPEGs PATH/<class>/*.jpg (make one with "
                      "`glassbox make-folder --synthetic --out DIR` and give DIR/train)");
  }

  const auto shared = std::make_shared<const ImageFolder>(folder, ImageFolderOptions{.sample = Shape{3, 224, 224},
                                                                                     .name = "bench_data"});
  const ImageFolder& data = *shared;
  for (int64_t i = 0; i < data.size() && !benchmark_flags.out_path.empty(); ++i) {
    if (same_file(benchmark_flags.out_path, data.path(i))) {
      throw ConfigError(cat("--benchmark_out=", excerpt(benchmark_flags.out_path, 200), " is one of --folder's images; "
                            "write the results elsewhere"));
    }
  }
  const double mean_bytes = warm_page_cache(data);
  std::fprintf(stderr, "bench_data: %s, %.1f KiB per file on average\n", data.describe().c_str(), mean_bytes / 1024);
  const RuntimeInfo info = runtime_info(Context::cpu());
  for (const auto& [key, value] : info.fields()) add_context(key, value);
  add_context("folder", data.describe());
  add_context("mean_file_kib", std::to_string(mean_bytes / 1024));
  add_context("protocol", "one thread; each iteration is Dataset::load of the next file (page cache "
                                          "warm), rng seeded by its index; images/s from the wall time");
  for (const auto& [mode, name] : {std::pair{SampleMode::kTraining, "training"},
                                   std::pair{SampleMode::kEvaluation, "evaluation"}}) {
    benchmark::RegisterBenchmark(cat("ImageFolder/load/3x224x224/", name).c_str(),
                                 [&data, mode = mode](benchmark::State& state) { run_load(state, data, mode); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  if (data.size() < kLoaderBatch) {
    std::fprintf(stderr, "bench_data: %lld images are fewer than one batch of %d: no Loader benchmarks\n",
                 static_cast<long long>(data.size()), kLoaderBatch);
    workers.clear();
  }
  for (const int w : workers) {
    benchmark::RegisterBenchmark(cat("ImageFolder/loader/3x224x224/training/workers:", w).c_str(),
                                 [shared, w](benchmark::State& state) { run_loader(state, shared, w); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  const size_t ran = run_google_benchmarks("bench_data", benchmark_flags);
  benchmark::Shutdown();
  if (ran == 0) {
    throw ConfigError(cat("no benchmark matches --benchmark_filter='", excerpt(benchmark_flags.filter, 200),
                          "'; the benchmarks: ImageFolder/load/3x224x224/training, .../evaluation, "
                          "ImageFolder/loader/3x224x224/training/workers:W"));
  }
  return g_any_benchmark_failed ? kExitFailure : 0;
}

}  // namespace
}  // namespace glassbox::bench

int main(int argc, char** argv) {
  return glassbox::run_program("bench_data", [&] { return glassbox::bench::run(argc, argv); });
}
