// bench/bench_gemm.cpp: the CPU's float GEMM as Glassbox's layers call it
// (`C = A B` on Eigen matrices, row-major, through product_into: tensor/
// product.h, on the build's kernels: tensor/cpu_blas.h), at 2048^3 and at every distinct im2col product of ResNet-50's
// and VGG16's convolutions (one image: K filters x P*Q pixels x C*R*S), read
// from the networks themselves. bench/gemm_vs_torch.py runs it against
// torch.matmul on the same shapes (bench/peers/torch_gemm.py), interleaved.
//
//   build/bench_gemm [--threads=N] [--nets=ResNet50,VGG16] [Google Benchmark flags]
//   build/bench_gemm --list-shapes        m,n,k and the layers of each shape, one per line
//   build/bench_gemm --serve [--threads=N]  "m n k seconds" lines in, "GFLOP/s library" lines out
//
// Each benchmark is "GEMM/<m>x<n>x<k>" with counter GFLOP/s, labelled with
// the layers it stands for and the library that ran it.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <vector>


#include "bench/support/google_benchmark.h"
#include "layers/conv2d/conv2d.h"
#include "nets/mlp_spec.h"
#include "nets/registry.h"
#include "tensor/cpu_blas.h"
#include "tensor/error.h"
#include "tensor/parse.h"
#include "tensor/product.h"
#include "tensor/runtime_info.h"
#include "tools/entry_point.h"

namespace glassbox {
namespace {

struct GemmShape {
  int64_t m, n, k;
  std::vector<std::string> layers;  // "ResNet50 conv1", ...: where it comes from
  auto key() const { return std::make_tuple(m, n, k); }
};

// Every ungrouped convolution's product for one image, first-seen order, each
// shape once with all the layers that share it.
std::vector<GemmShape> convolution_shapes(const std::vector<std::string>& nets) {
  std::vector<GemmShape> shapes;
  std::map<std::tuple<int64_t, int64_t, int64_t>, size_t> seen;
  std::set<std::string> named;
  for (const std::string& net_name : nets) {
    NetSpec net;
    try {
      net = find_net(net_name);
    } catch (const ConfigError& e) {
      throw ConfigError(cat("--nets: ", e.what()));
    }
    if (!named.insert(net.name).second) throw ConfigError(cat("--nets: ", net.name, " is given twice; give it once"));
    const Graph graph = build_net(net, 1);
    int convolutions = 0;
    for (const Node& node : graph.nodes()) {
      const auto* conv = dynamic_cast<const Conv2d*>(node.layer.get());
      if (conv == nullptr || conv->options().groups != 1) continue;
      ++convolutions;
      const Shape& x = graph.nodes()[static_cast<size_t>(node.inputs.at(0))].shape;  // (N, C, H, W)
      const Conv2d::Options& o = conv->options();
      GemmShape s{.m = o.out_channels, .n = node.shape[2] * node.shape[3],
                  .k = x[1] * o.kernel.h * o.kernel.w, .layers = {}};
      const auto [it, added] = seen.try_emplace(s.key(), shapes.size());
      if (added) shapes.push_back(s);
      shapes[it->second].layers.push_back(cat(net.name, " ", node.name));
    }
    if (convolutions == 0) {
      throw ConfigError(cat("--nets: ", net.name, " has no ungrouped convolution, whose products bench_gemm times"));
    }
  }
  return shapes;
}

// "--nets=ResNet50,MLP:784,256,10": the network names, an MLP's sizes kept
// with it (an item of digits alone continues the MLP before it: no network's
// name is a number; so does any item after an MLP's first size, as an MLP
// needs two, so that "MLP:784,abc" is refused for its classes, by name).
std::vector<std::string> network_list(std::string_view text) {
  std::vector<std::string> nets;
  for (const std::string_view item : split_commas(text)) {
    const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string_view::npos;
    const bool after_mlp = !nets.empty() && has_mlp_prefix(nets.back());
    const bool one_size = after_mlp && nets.back().find(',') == std::string::npos &&
                          nets.back().size() > kMlpPrefix.size();
    if (after_mlp && (digits || (one_size && !item.empty()))) {
      nets.back() += cat(",", item);
    } else if (item.empty()) {
      throw ConfigError(cat("--nets=", excerpt(text), ": an empty network name; give one network or more, "
                            "comma-separated (", net_names(), ")"));
    } else {
      nets.emplace_back(item);
    }
  }
  return nets;
}

std::string label_of(const GemmShape& s) {
  std::string label = s.layers.front();
  if (s.layers.size() > 1) label += cat(" (+", s.layers.size() - 1, " more)");
  return label;
}

// One product's operands, timed window by window: A (m, k) and B (k, n) from
// U(-1, 1), C (m, n), one untimed product first (first touch of C, thread
// start-up, oneDNN's kernel generation).
class TimedProduct {
 public:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  TimedProduct(int64_t m, int64_t n, int64_t k) : m_(m), n_(n), k_(k) {
    std::srand(7);  // Eigen's Random() draws from rand()
    a_ = Matrix::Random(m, k);
    b_ = Matrix::Random(k, n);
    c_.resize(m, n);
    const GemmCalls before = cpu_gemm_calls();
    run_once();
    const GemmCalls after = cpu_gemm_calls();
    // Which library took the product (Note [Eigen's GEMM on oneDNN's sgemm]); a
    // build without Glassbox's own sgemm_ counts nothing and names its kernels.
    ran_on_ = after.onednn > before.onednn       ? "oneDNN sgemm"
              : after.openblas > before.openblas ? "OpenBLAS"
                                                 : cpu_gemm_name();
  }
  // Seconds of one product.
  double run_once() {
    const auto start = std::chrono::steady_clock::now();
    product_into(c_, a_, b_);
    benchmark::DoNotOptimize(c_.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Products one after another until they add up to `window` seconds; GFLOP/s.
  double gflops_over(double window) {
    double seconds = 0.0;
    int64_t products = 0;
    while (seconds < window) {
      seconds += run_once();
      ++products;
    }
    return flops() * static_cast<double>(products) / seconds / 1e9;
  }
  double flops() const { return 2.0 * static_cast<double>(m_ * n_) * static_cast<double>(k_); }
  const std::string& ran_on() const { return ran_on_; }
  bool is(int64_t m, int64_t n, int64_t k) const { return m == m_ && n == n_ && k == k_; }

 private:
  int64_t m_, n_, k_;
  Matrix a_, b_, c_;
  std::string ran_on_;
};

void time_product(benchmark::State& state, const GemmShape& s) {
  TimedProduct product(s.m, s.n, s.k);
  double seconds = 0.0;
  for (auto _ : state) {
    const double elapsed = product.run_once();
    state.SetIterationTime(elapsed);
    seconds += elapsed;
  }
  state.counters["GFLOP/s"] = product.flops() * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.SetLabel(cat(label_of(s), "; ", product.ran_on()));
}

// One request of --serve: a product's shape and how long to time it.
struct ServeRequest {
  int64_t m = 0, n = 0, k = 0;
  double window = 0.0;
};

// The largest side --serve takes: operands past it are terabytes, and every
// size product below stays far inside int64_t.
constexpr int64_t kMaxServedSide = int64_t{1} << 20;
constexpr double kMaxServedWindow = 3600.0;  // seconds

// "m n k seconds", separated by spaces or tabs, nothing else. ConfigError
// naming what is wrong.
ServeRequest parse_serve_request(std::string_view line) {
  std::vector<std::string_view> words;
  for (size_t at = 0; at < line.size();) {
    const size_t start = line.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const size_t stop = std::min(line.find_first_of(" \t", start), line.size());
    words.push_back(line.substr(start, stop - start));
    at = stop;
  }
  if (words.size() != 4) throw ConfigError(cat(words.size(), words.size() == 1 ? " word" : " words", " where 4 are"));
  return {.m = parse_int("m", words[0], 1, kMaxServedSide),
          .n = parse_int("n", words[1], 1, kMaxServedSide),
          .k = parse_int("k", words[2], 1, kMaxServedSide),
          .window = parse_number("seconds", words[3], 1e-6, kMaxServedWindow)};
}

// --serve: for bench/gemm_vs_torch.py, which alternates short windows of this
// and of the PyTorch peer (bench/peers/torch_gemm.py, the same protocol).
// Reads "m n k seconds" per line, answers "GFLOP/s library", or "error: ..."
// on one line, per line, whatever the line holds (its text quoted as an
// excerpt); a blank line is no request. The operands of the last shape are kept.
void serve() {
  std::printf("ready: %s\n", cpu_blas_description().c_str());
  std::fflush(stdout);
  std::unique_ptr<TimedProduct> product;
  for (std::string line; std::getline(std::cin, line);) {
    if (line.ends_with('\r')) line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // a blank line is no request
    try {
      const ServeRequest r = parse_serve_request(line);
      // A shape too large for the host's memory is answered, and the next
      // request served, as for a malformed line.
      try {
        if (!product || !product->is(r.m, r.n, r.k)) {
          product.reset();
          product = std::make_unique<TimedProduct>(r.m, r.n, r.k);
        }
        std::printf("%.3f %s\n", product->gflops_over(r.window), product->ran_on().c_str());
      } catch (const std::bad_alloc&) {
        product.reset();
        std::printf("error: out of host memory for the operands of %lld x %lld x %lld\n", static_cast<long long>(r.m),
                    static_cast<long long>(r.n), static_cast<long long>(r.k));
      }
    } catch (const ConfigError& e) {
      std::printf("error: expected 'm n k seconds' (sides from 1 to %lld, seconds up to %g), got '%s': %s\n",
                  static_cast<long long>(kMaxServedSide), kMaxServedWindow, excerpt(line, 80).c_str(), e.what());
    } catch (const Error& e) {
      product.reset();
      std::printf("error: %s\n", e.what());
    }
    std::fflush(stdout);
  }
}

int run(int argc, char** argv) {
  std::vector<std::string> nets = {"ResNet50", "VGG16"};
  int threads = 0;
  bool list = false, serve_requests = false;
  bench::GoogleBenchmarkFlags benchmark_flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string name = arg.substr(0, arg.find('='));
    if (name != "--threads" && name != "--nets" && name != "--list-shapes" && name != "--serve") {
      bench::take_google_benchmark_flag(arg, benchmark_flags);
      continue;
    }
    bench::refuse_repeat(name, benchmark_flags);
    if (arg.starts_with("--threads=")) {
      threads = static_cast<int>(parse_int("--threads", arg.substr(10), 1, 1024));
    } else if (arg.starts_with("--nets=")) {
      nets = network_list(std::string_view(arg).substr(7));
    } else if (arg == "--list-shapes") {
      list = true;
    } else if (arg == "--serve") {
      serve_requests = true;
    } else if (name == "--threads" || name == "--nets") {
      throw ConfigError(cat(name, " needs a value: ", name, "=VALUE"));
    } else {
      throw ConfigError(cat(name, " takes no value"));
    }
  }
  if (benchmark_flags.help) {
    std::printf("bench_gemm [--threads=N] [--nets=ResNet50,VGG16] [Google Benchmark flags]\n"
                "bench_gemm --list-shapes [--nets=...]      m,n,k and the layers of each shape, one per line\n"
                "bench_gemm --serve [--threads=N]           \"m n k seconds\" lines in, \"GFLOP/s library\" lines out\n"
                "Times the CPU's float GEMM at 2048^3 and at each im2col product of the networks' convolutions,\n"
                "named GEMM/<m>x<n>x<k>. Networks: %s.\n\n",
                net_names().c_str());
  }
  bench::take_google_benchmark_environment(benchmark_flags);  // before the checks below see the flags
  if (list && serve_requests) throw ConfigError("--list-shapes and --serve: give one of them");
  if ((list || serve_requests) && !benchmark_flags.help &&
      (!benchmark_flags.passed_on.empty() || !benchmark_flags.out_path.empty())) {
    const std::string given = benchmark_flags.passed_on.empty() ? "--benchmark_out" : benchmark_flags.passed_on.front();
    throw ConfigError(cat(list ? "--list-shapes" : "--serve", " runs no benchmark, so it takes no Google Benchmark "
                                                             "flag (given: ", excerpt(given, 80), ")"));
  }
  std::vector<GemmShape> shapes = {{.m = 2048, .n = 2048, .k = 2048, .layers = {"the 2048^3 yardstick"}}};
  for (GemmShape& s : convolution_shapes(nets)) shapes.push_back(std::move(s));
  if (benchmark_flags.help) {
    if (!bench::initialize_google_benchmark(argv[0], benchmark_flags)) return kExitUsage;  // prints its flags, exits
  }
  if (list) {
    for (const GemmShape& s : shapes) std::printf("%ld,%ld,%ld %s\n", s.m, s.n, s.k, label_of(s).c_str());
    return 0;
  }
  if (serve_requests) {
    if (threads > 0) omp_set_num_threads(threads);
    const Context ctx = Context::cpu();  // Eigen on one thread, the BLAS on every one (as the layers run)
    serve();
    return 0;
  }
  if (!bench::initialize_google_benchmark(argv[0], benchmark_flags)) return kExitUsage;
  if (threads > 0) omp_set_num_threads(threads);
  const Context ctx = Context::cpu();
  for (const auto& [key, value] : runtime_info(ctx).fields()) bench::add_context(key, value);
  for (const GemmShape& s : shapes) {
    benchmark::RegisterBenchmark(cat("GEMM/", s.m, "x", s.n, "x", s.k).c_str(),
                                 [s](benchmark::State& state) { time_product(state, s); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  const size_t ran = bench::run_google_benchmarks("bench_gemm", benchmark_flags);
  benchmark::Shutdown();
  if (ran == 0) {
    throw ConfigError(cat("no benchmark matches --benchmark_filter='", excerpt(benchmark_flags.filter, 200),
                          "'; --list-shapes lists them (named GEMM/<m>x<n>x<k>)"));
  }
  return 0;
}

}  // namespace
}  // namespace glassbox

int main(int argc, char** argv) {
  return glassbox::run_program("bench_gemm", [&] { return glassbox::run(argc, argv); });
}
