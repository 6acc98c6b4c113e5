// layers/conv2d/conv2d_algorithms_cuda.cpp: Conv2d's cuDNN choice, made once
// in prepare: one candidate per pass (forward, backward-data,
// backward-filter) and the workspace it needs.
//
// Candidates are the legacy algorithms and the graph API's engine
// configurations (Note [Engine configurations], layers/conv2d/engine_config.h),
// as PrepareOptions::cudnn_api (--cudnn-api) allows. By default they come
// from cuDNN's legacy heuristics (cudnnGetConvolution*Algorithm_v7), ranked;
// with --cudnn-api graph from the graph API's heuristics, ranked. On request
// (--cudnn-search) every candidate is timed on scratch tensors allocated here
// and freed at the end of the search: cudnnFindConvolution*AlgorithmEx lists
// the legacy algorithms with their status, math type and determinism, each
// configuration's execution plan is built, and Glassbox times every one that
// runs with the same clock (one untimed run, then the fastest of three, on
// CUDA events), so that the two kinds are compared on equal terms. The
// results are kept per problem for the run and optionally in a file (Note
// [Autotune cache], layers/conv2d/autotune_cache.h). The first candidate
// that cuDNN supports, that is deterministic when PrepareOptions::deterministic
// asks for it (cuDNN reports CUDNN_DETERMINISTIC, or a configuration's
// NONDETERMINISTIC note), that uses the math the context's precision allows,
// whose workspace is within the limit and can actually be reserved, is
// taken; every verdict is kept for reports (Conv2d::algorithm_candidates,
// algorithms()).
//
// Note [Math type per pass]: cuDNN decides between FMA and tensor-op kernels
// from the algorithm *and* the descriptor's math type, and its search reports
// the math type each result was obtained with. So each pass gets its own
// convolution descriptor carrying its chosen result's math type (kTf32, and
// 16-bit data). In the reference precision (kFp32) every descriptor stays
// CUDNN_FMA_MATH, and a result that reports tensor-op math is skipped; with
// float data in either precision a result that would down-convert it
// (TENSOR_OP_MATH_ALLOW_CONVERSION) is. With bfloat16 or float16 data,
// tensor-op results are the point: the search's descriptor asks for
// CUDNN_TENSOR_OP_MATH, the convolution's compute type stays float (fp32
// accumulation: cuDNN's PSEUDO_BFLOAT16 and PSEUDO_HALF configurations), and
// algorithms() marks the passes whose result reports tensor-op math. A 16-bit
// result reporting TENSOR_OP_MATH_ALLOW_CONVERSION is skipped too: the data
// need no conversion to reach the tensor cores, and cuDNN does not say what
// such a result would convert them to (bfloat16 to float16 loses range), so
// the data stay in the type the graph chose.
#include "layers/conv2d/conv2d_algorithms_cuda.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "tensor/event_timer.h"

namespace glassbox::conv2d_cuda {
namespace {

constexpr std::array<std::string_view, 3> kPassNames = {"fwd", "bwd-data", "bwd-filter"};
constexpr std::array<std::string_view, 3> kPassLongNames = {"forward", "backward-data", "backward-filter"};
constexpr std::string_view kNotDeterministic = "not deterministic";

bool is_16_bit(const SearchInput& in) { return in.data != DType::kFloat32; }
// Whether a chosen result runs with the math type cuDNN reported for it, or
// with the base math (kFp32: FMA only). Note [Math type per pass].
bool runs_result_math(const SearchInput& in) { return in.tf32 || is_16_bit(in); }

std::string algorithm_name(Pass pass, int algo) {
  switch (pass) {
    case Pass::kForward:
      switch (algo) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
      }
      break;
    case Pass::kBackwardData:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
      }
      break;
    case Pass::kBackwardFilter:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
      }
      break;
  }
  return cat("ALGO_", algo);
}

int algorithm_count(Pass pass) {
  switch (pass) {
    case Pass::kForward: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case Pass::kBackwardData: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    case Pass::kBackwardFilter: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

// How many results cuDNN's search of a pass may return: its own count, which
// can list an algorithm once per math type and so exceed the algorithm count
// (results beyond the array asked for would be dropped).
int result_count(cudnnHandle_t handle, Pass pass) {
  int count = 0;
  switch (pass) {
    case Pass::kForward: CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count)); break;
    case Pass::kBackwardData: CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count)); break;
    case Pass::kBackwardFilter: CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count)); break;
  }
  return std::max(count, algorithm_count(pass));
}

// One search result, whichever pass it came from.
struct Perf {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  float time_ms = -1.0f;
  size_t memory = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  bool deterministic = false;
  EngineConfig engine;  // engine.engine >= 0: a graph-API engine configuration, not a legacy algorithm
  // Why the selection refused the configuration (select_engine_configs), where
  // it did: the run's rules, or past the runtime-compiled ones a search builds.
  std::optional<std::string> refused;
  bool is_engine() const { return engine.engine >= 0; }
};
// A configuration as a candidate, before it is built or timed.
Perf engine_perf(const EngineConfig& config, std::optional<std::string> refused) {
  Perf p{.algo = -1, .status = CUDNN_STATUS_SUCCESS};
  p.deterministic = (config.numerical_notes & kNoteNondeterministic) == 0;
  p.engine = config;
  p.refused = std::move(refused);
  return p;
}
template <typename CudnnPerf>
std::vector<Perf> to_perfs(const std::vector<CudnnPerf>& results, int count, bool measured) {
  std::vector<Perf> perfs;
  for (int i = 0; i < count; ++i) {
    const CudnnPerf& r = results[static_cast<size_t>(i)];
    perfs.push_back({static_cast<int>(r.algo), r.status, measured ? r.time : -1.0f, r.memory, r.mathType,
                     r.determinism == CUDNN_DETERMINISTIC});
  }
  return perfs;
}

// Scratch tensors for the measured search: x, w, y, a workspace, and the
// bias of a fused forward.
struct Scratch {
  Tensor x, w, y, workspace, bias;
  size_t workspace_bytes = 0;
  // Per pass, the largest workspace its legacy algorithms ask for; and
  // whether an engine configuration went untimed for want of workspace memory
  // in the pass being measured. Either makes that pass's results hold the
  // memory free at the time, not the problem's answer, so they are not kept
  // (Note [Autotune cache]).
  std::array<size_t, 3> wanted{};
  bool short_of_memory = false;
};

std::vector<Perf> heuristics(const ConvDescriptors& d, cudnnConvolutionDescriptor_t conv, Pass pass) {
  const int wanted = result_count(d.handle, pass);
  int count = 0;
  switch (pass) {
    case Pass::kForward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> r(static_cast<size_t>(wanted));
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, conv, d.y, wanted, &count, r.data()));
      return to_perfs(r, count, false);
    }
    case Pass::kBackwardData: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> r(static_cast<size_t>(wanted));
      CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(d.handle, d.w, d.y, conv, d.x, wanted, &count,
                                                              r.data()));
      return to_perfs(r, count, false);
    }
    case Pass::kBackwardFilter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> r(static_cast<size_t>(wanted));
      CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(d.handle, d.x, d.y, conv, d.w, wanted, &count,
                                                                r.data()));
      return to_perfs(r, count, false);
    }
  }
  return {};
}

// Runs every algorithm once on the scratch tensors; sorted fastest first by cuDNN.
std::vector<Perf> measure(const ConvDescriptors& d, cudnnConvolutionDescriptor_t conv, Pass pass,
                          const Scratch& s) {
  const int wanted = result_count(d.handle, pass);
  int count = 0;
  void* ws = s.workspace_bytes > 0 ? s.workspace.raw() : nullptr;
  switch (pass) {
    case Pass::kForward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> r(static_cast<size_t>(wanted));
      CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(d.handle, d.x, s.x.raw(), d.w, s.w.raw(), conv, d.y,
                                                         s.y.raw(), wanted, &count, r.data(), ws,
                                                         s.workspace_bytes));
      return to_perfs(r, count, true);
    }
    case Pass::kBackwardData: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> r(static_cast<size_t>(wanted));
      CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(d.handle, d.w, s.w.raw(), d.y, s.y.raw(), conv,
                                                              d.x, s.x.raw(), wanted, &count, r.data(), ws,
                                                              s.workspace_bytes));
      return to_perfs(r, count, true);
    }
    case Pass::kBackwardFilter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> r(static_cast<size_t>(wanted));
      CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(d.handle, d.x, s.x.raw(), d.y, s.y.raw(), conv,
                                                                d.w, s.w.raw(), wanted, &count, r.data(), ws,
                                                                s.workspace_bytes));
      return to_perfs(r, count, true);
    }
  }
  return {};
}

// cuDNN's workspace need for one algorithm; its status says whether the
// algorithm supports these shapes at all.
cudnnStatus_t workspace_size(const ConvDescriptors& d, cudnnConvolutionDescriptor_t conv, Pass pass, int algo,
                             size_t& bytes) {
  bytes = 0;
  switch (pass) {
    case Pass::kForward:
      return cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, conv, d.y,
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes);
    case Pass::kBackwardData:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(
          d.handle, d.w, d.y, conv, d.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
    case Pass::kBackwardFilter:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
          d.handle, d.x, d.y, conv, d.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// What the pass's output keeps of its old value in the search and in the
// plan that runs it: backward-filter adds into fp32 gradients.
float search_beta(const SearchInput& in, Pass pass) { return pass == Pass::kBackwardFilter ? in.filter_beta : 0.0f; }

// One legacy algorithm on the scratch tensors, as cudnnFind runs it; a
// fused forward through the call that runs it (Note [Fused convolution, bias
// and ReLU on cuDNN], conv2d_cuda.cpp), which supports fewer configurations.
cudnnStatus_t run_legacy(const SearchInput& in, cudnnConvolutionDescriptor_t conv, Pass pass, int algo,
                         const Scratch& s, size_t workspace, float beta) {
  const ConvDescriptors& d = in.descriptors;
  void* ws = workspace > 0 ? s.workspace.raw() : nullptr;
  switch (pass) {
    case Pass::kForward:
      if (in.fused_relu != nullptr) {
        return cudnnConvolutionBiasActivationForward(
            d.handle, &kOne, d.x, s.x.raw(), d.w, s.w.raw(), conv, static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws,
            workspace, &kZero, d.y, s.y.raw(), in.fused_bias, s.bias.raw(), in.fused_relu, d.y, s.y.raw());
      }
      return cudnnConvolutionForward(d.handle, &kOne, d.x, s.x.raw(), d.w, s.w.raw(), conv,
                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, workspace, &kZero, d.y,
                                     s.y.raw());
    case Pass::kBackwardData:
      return cudnnConvolutionBackwardData(d.handle, &kOne, d.w, s.w.raw(), d.y, s.y.raw(), conv,
                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, workspace, &kZero,
                                          d.x, s.x.raw());
    case Pass::kBackwardFilter:
      return cudnnConvolutionBackwardFilter(d.handle, &kOne, d.x, s.x.raw(), d.y, s.y.raw(), conv,
                                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, workspace, &beta,
                                            d.w, s.w.raw());
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// Glassbox's clock for every candidate of the measured search: one untimed
// run, then the fastest of three, between CUDA events. `run` returns
// cuDNN's status; a failure ends the timing and is the result.
constexpr int kTimedRuns = 3;
template <typename Run>
std::pair<cudnnStatus_t, float> time_runs(Context& ctx, Run&& run) {
  cudnnStatus_t status = run();
  if (status != CUDNN_STATUS_SUCCESS) return {status, -1.0f};
  EventTimer timer(ctx, kTimedRuns + 1);
  timer.record(0);
  for (int i = 1; i <= kTimedRuns; ++i) {
    status = run();
    if (status != CUDNN_STATUS_SUCCESS) return {status, -1.0f};
    timer.record(i);
  }
  double best = std::numeric_limits<double>::infinity();
  for (int i = 1; i <= kTimedRuns; ++i) best = std::min(best, timer.elapsed_ms(i - 1, i));
  return {CUDNN_STATUS_SUCCESS, static_cast<float>(best)};
}

// At most this many engine configurations per pass are built and timed:
// the heuristics' first ones that the run allows, where the fast kernels rank.
constexpr size_t kMaxEngineConfigs = 12;
// Of them, at most this many that cuDNN compiles at run time (select_engine_configs).
constexpr size_t kMaxRuntimeCompiledConfigs = 2;

// Why the run refuses an engine configuration for the pass, or nothing.
std::optional<std::string> config_refusal(const PrepareOptions& options, const SearchInput& in, Pass pass,
                                          const EngineConfig& config) {
  if (pass == Pass::kForward && in.fused_forward()) return "the fused bias and ReLU run on the legacy call";
  return engine_refusal(config.numerical_notes, in.data, in.tf32, options.deterministic);
}

// The configurations the pass's search takes from cuDNN's heuristics (select_engine_configs).
std::vector<SelectedConfig> offered_configs(const PrepareOptions& options, const SearchInput& in, Pass pass,
                                            const ConvOperationGraph& graph, GraphFailure& failure) {
  return select_engine_configs(graph.offered_configs(failure), kMaxEngineConfigs, kMaxRuntimeCompiledConfigs,
                               [&](const EngineConfig& c) { return config_refusal(options, in, pass, c); });
}

// The layer's operation graphs, built when a candidate first needs one: per
// pass, one that writes (beta 0) and one that adds (beta 1).
class LayerGraphs {
 public:
  std::shared_ptr<const ConvOperationGraph> get(const SearchInput& in, Pass pass, float beta, GraphFailure& failure) {
    std::shared_ptr<const ConvOperationGraph>& g = graphs_[index_of(pass)][beta != 0.0f ? 1 : 0];
    if (!g) g = ConvOperationGraph::build(in.descriptors.handle, in.problem, pass, in.data, beta, failure);
    return g;
  }

 private:
  std::array<std::array<std::shared_ptr<const ConvOperationGraph>, 2>, 3> graphs_;
};

bool is_tensor_op(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

std::string bytes_str(size_t bytes) { return format_bytes(static_cast<int64_t>(bytes)); }
std::string ms_str(float ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", static_cast<double>(ms));
  return text;
}

// Tries to hold `bytes` of the context's shared workspace; false when out of memory.
bool try_reserve(Context& ctx, size_t bytes) {
  try {
    ctx.reserve_workspace(bytes);
    return true;
  } catch (const OutOfMemoryError&) {
    return false;
  }
}

// The GPU's name and cuDNN's version, for the autotune cache's keys.
std::string device_name(Context& ctx) {
  static std::mutex mutex;
  static std::map<int, std::string> names;
  const int device = cuda_resources(ctx).device;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = names.find(device);
  if (it == names.end()) {
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    it = names.emplace(device, properties.name).first;
  }
  return it->second;
}
std::string cudnn_version() {
  const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch
  return cat(v / 10000, ".", v % 10000 / 100, ".", v % 100);
}

std::vector<MeasuredAlgorithm> to_measured(const std::vector<Perf>& perfs) {
  std::vector<MeasuredAlgorithm> kept;
  for (const Perf& p : perfs) {
    kept.push_back({p.algo, static_cast<int>(p.status), p.time_ms, p.memory, static_cast<int>(p.math),
                    p.deterministic, p.engine});
  }
  return kept;
}
std::vector<Perf> from_measured(const std::vector<MeasuredAlgorithm>& kept) {
  std::vector<Perf> perfs;
  for (const MeasuredAlgorithm& m : kept) {
    perfs.push_back({m.algo, static_cast<cudnnStatus_t>(m.status), m.time_ms, static_cast<size_t>(m.memory),
                     static_cast<cudnnMathType_t>(m.math), m.deterministic, m.engine});
  }
  return perfs;
}

// The measured search runs on scratch tensors, with as much workspace as the
// largest candidate wants within the limit (less if that cannot be had).
// Whether an inference prepare leaves the pass out (PrepareOptions::phase).
bool skipped(const PrepareOptions& options, Pass pass) {
  return options.phase == Phase::kInference && pass != Pass::kForward;
}

// The scratch tensors without a workspace.
Scratch scratch_tensors(Context& ctx, const SearchInput& in) {
  Scratch scratch;
  scratch.x = ctx.allocate(in.x, in.data, MemoryCategory::kWorkspace);
  scratch.w = ctx.allocate(in.w, in.data, MemoryCategory::kWorkspace);
  scratch.y = ctx.allocate(in.y, in.data, MemoryCategory::kWorkspace);
  if (in.fused_relu != nullptr) scratch.bias = ctx.allocate(Shape{in.y[1]}, in.data, MemoryCategory::kWorkspace);
  return scratch;
}

Scratch allocate_scratch(Context& ctx, const PrepareOptions& options, const SearchInput& in,
                         cudnnConvolutionDescriptor_t search) {
  Scratch scratch = scratch_tensors(ctx, in);
  for (Pass pass : kPasses) {
    if (in.pins[index_of(pass)] != Conv2d::kChoose || skipped(options, pass)) continue;
    for (int algo = 0; algo < algorithm_count(pass); ++algo) {
      size_t bytes = 0;
      if (workspace_size(in.descriptors, search, pass, algo, bytes) == CUDNN_STATUS_SUCCESS &&
          bytes <= options.workspace_limit) {
        scratch.wanted[index_of(pass)] = std::max(scratch.wanted[index_of(pass)], bytes);
      }
    }
  }
  const size_t wanted = *std::max_element(scratch.wanted.begin(), scratch.wanted.end());
  for (size_t bytes = wanted; bytes > 0; bytes /= 2) {
    try {
      const auto floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
      scratch.workspace = ctx.allocate(Shape{floats}, DType::kFloat32, MemoryCategory::kWorkspace);
      scratch.workspace_bytes = bytes;
      break;
    } catch (const OutOfMemoryError&) {
      // Algorithms needing more than we could get are reported as failures by the search.
    }
  }
  return scratch;
}

// Grows the scratch's workspace to `bytes`; false where that memory cannot be had.
bool ensure_workspace(Context& ctx, Scratch& scratch, size_t bytes) {
  if (bytes <= scratch.workspace_bytes) return true;
  try {
    const auto floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
    Tensor larger = ctx.allocate(Shape{floats}, DType::kFloat32, MemoryCategory::kWorkspace);
    scratch.workspace = std::move(larger);
    scratch.workspace_bytes = bytes;
    return true;
  } catch (const OutOfMemoryError&) {
    scratch.short_of_memory = true;
    return false;
  }
}

// Times each legacy algorithm cudnnFind ran, on Glassbox's clock, with the
// descriptor it would run with (Note [Math type per pass]).
void retime_legacy(Context& ctx, const SearchInput& in, Pass pass, const Scratch& scratch, std::vector<Perf>& perfs) {
  for (Perf& p : perfs) {
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > scratch.workspace_bytes) continue;
    const ConvolutionDescriptor conv = in.make_convolution(runs_result_math(in) ? p.math : in.base_math);
    const float beta = search_beta(in, pass);
    const auto [status, ms] = time_runs(
        ctx, [&] { return run_legacy(in, conv.get(), pass, p.algo, scratch, p.memory, beta); });
    p.status = status;
    p.time_ms = ms;
  }
}

// Why the search's rules refuse a legacy algorithm whatever it measured, or
// none: not deterministic where that is asked for, tensor-op math with TF32
// off, or math that may convert the data.
std::optional<std::string> legacy_refusal(const PrepareOptions& options, const SearchInput& in, const Perf& perf) {
  if (options.deterministic && !perf.deterministic) return std::string(kNotDeterministic);
  if (!in.tf32 && !is_16_bit(in) && is_tensor_op(perf.math)) return "uses tensor-op math, TF32 is off";
  if (perf.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
    return is_16_bit(in) ? "may convert the 16-bit data (TENSOR_OP_MATH_ALLOW_CONVERSION)"
                         : "would down-convert float data";
  }
  return std::nullopt;
}

// Note [When cuDNN refuses the fused call]: cuDNN's heuristics rank the
// plain forward call's algorithms, and cudnnConvolutionBiasActivationForward
// runs fewer configurations than cudnnConvolutionForward, with no call that
// asks whether it runs one. So a fused forward chosen without a measured
// search runs its candidates once on scratch tensors, in the heuristics'
// order, until one succeeds; each that fails takes cuDNN's status, and the
// one that succeeds goes first. One whose workspace the trial could not have
// is not known to run in the fused call: it takes the status of a failed
// allocation, so that the choice never takes it untried. A candidate the
// choice would refuse anyway (legacy_refusal, or a workspace past the limit)
// is not tried, so that the one that succeeds is one the choice takes. Where
// the scratch cannot be had, no candidate is tried, each takes the status of
// a failed allocation, and `note` says so: the plain call runs instead, and
// the layer names `note` as the reason.
void try_fused_call(Context& ctx, const PrepareOptions& options, const SearchInput& in, std::vector<Perf>& perfs,
                    std::string& note) {
  std::optional<Scratch> scratch;
  try {
    scratch = scratch_tensors(ctx, in);
  } catch (const OutOfMemoryError&) {
    note = "not tried through the fused call: no memory for its scratch tensors";
    for (Perf& p : perfs) {
      if (p.status == CUDNN_STATUS_SUCCESS) p.status = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    }
    return;
  }
  for (auto p = perfs.begin(); p != perfs.end(); ++p) {
    if (p->status != CUDNN_STATUS_SUCCESS || p->memory > options.workspace_limit) continue;
    if (legacy_refusal(options, in, *p)) continue;
    // The workspace of the descriptor the trial runs, whose math may not be the search's.
    const ConvolutionDescriptor conv = in.make_convolution(runs_result_math(in) ? p->math : in.base_math);
    size_t bytes = 0;
    if (workspace_size(in.descriptors, conv.get(), Pass::kForward, p->algo, bytes) != CUDNN_STATUS_SUCCESS) continue;
    if (bytes > options.workspace_limit) continue;
    if (!ensure_workspace(ctx, *scratch, bytes)) {
      p->status = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;  // untried: not taken
      continue;
    }
    p->status = run_legacy(in, conv.get(), Pass::kForward, p->algo, *scratch, bytes, 0.0f);
    if (p->status == CUDNN_STATUS_SUCCESS) {
      std::rotate(perfs.begin(), p, p + 1);
      break;
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_of(ctx)));  // a trial run that faulted is named here, at prepare
}

// Builds and times the engine configurations cuDNN's heuristics offer for
// the pass. `failure` says why there are none, where that is so.
std::vector<Perf> measure_engines(Context& ctx, const PrepareOptions& options, const SearchInput& in, Pass pass,
                                  LayerGraphs& graphs, Scratch& scratch, std::string& failure) {
  GraphFailure f;
  const std::shared_ptr<const ConvOperationGraph> graph = graphs.get(in, pass, search_beta(in, pass), f);
  if (!graph) {
    failure = f.text();
    return {};
  }
  const std::vector<SelectedConfig> configs = offered_configs(options, in, pass, *graph, f);
  if (configs.empty()) failure = f.status != CUDNN_STATUS_SUCCESS ? f.text() : "cuDNN's heuristics offer none";
  std::vector<Perf> perfs;
  const cudnnHandle_t handle = in.descriptors.handle;
  for (const auto& [config, refusal] : configs) {
    Perf p = engine_perf(config, refusal);
    if (refusal) {  // listed with its reason, not built or timed
      perfs.push_back(std::move(p));
      continue;
    }
    GraphFailure why;
    const std::shared_ptr<const GraphPlan> plan = GraphPlan::make(handle, graph, config, why);
    if (!plan) {
      p.status = why.status;
    } else {
      p.memory = plan->workspace();
      if (p.memory <= options.workspace_limit) {  // beyond it: listed untimed, refused by the choice
        if (!ensure_workspace(ctx, scratch, p.memory)) {
          p.status = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
        } else {
          void* ws = p.memory > 0 ? scratch.workspace.raw() : nullptr;
          const auto [status, ms] = time_runs(ctx, [&] {
            return plan->execute(handle, in.layer, scratch.x.raw(), scratch.w.raw(), scratch.y.raw(), ws);
          });
          p.status = status;
          p.time_ms = ms;
        }
      }
    }
    perfs.push_back(std::move(p));
  }
  return perfs;
}

// Fastest first: the candidates that ran, by time, then the others in their order.
void sort_by_time(std::vector<Perf>& perfs) {
  std::stable_sort(perfs.begin(), perfs.end(), [](const Perf& a, const Perf& b) {
    const bool a_ran = a.status == CUDNN_STATUS_SUCCESS && a.time_ms >= 0;
    const bool b_ran = b.status == CUDNN_STATUS_SUCCESS && b.time_ms >= 0;
    if (a_ran != b_ran) return a_ran;
    return a_ran && a.time_ms < b.time_ms;
  });
}

// A pinned pass: the pin runs if it can, or prepare fails naming it.
PassChoice choose_pinned(Context& ctx, const PrepareOptions& options, const SearchInput& in, Pass pass,
                         cudnnConvolutionDescriptor_t search, std::vector<Conv2d::AlgorithmCandidate>& list) {
  const std::string_view pass_name = kPassLongNames[index_of(pass)];
  const int algo = in.pins[index_of(pass)];
  const std::string algo_name = algorithm_name(pass, algo);
  auto reject = [&](const std::string& why) {
    throw ConfigError(cat(in.layer, " (Conv2d): pinned ", pass_name, " algorithm ", algo, " (", algo_name, ") ",
                          why));
  };
  if (algo < 0 || algo >= algorithm_count(pass)) reject(cat("is not a cuDNN ", pass_name, " algorithm"));
  size_t bytes = 0;
  const cudnnStatus_t status = workspace_size(in.descriptors, search, pass, algo, bytes);
  if (status != CUDNN_STATUS_SUCCESS) reject(cat("is not supported here: ", cudnnGetErrorString(status)));
  // Whether the pin is deterministic is cuDNN's word, from its heuristics' list.
  const std::vector<Perf> listed = heuristics(in.descriptors, search, pass);
  const auto entry = std::find_if(listed.begin(), listed.end(), [&](const Perf& p) { return p.algo == algo; });
  const bool deterministic = entry != listed.end() && entry->deterministic;
  if (options.deterministic && !deterministic) {
    reject("is not deterministic (cuDNN does not report it CUDNN_DETERMINISTIC), and deterministic was asked for");
  }
  if (bytes > options.workspace_limit) {
    reject(cat("needs ", bytes_str(bytes), " of workspace, the limit is ", bytes_str(options.workspace_limit)));
  }
  if (!try_reserve(ctx, bytes)) reject(cat("needs ", bytes_str(bytes), " of workspace: out of memory"));
  // Note [When cuDNN refuses the fused call]: the workspace query above is
  // the plain call's; only a run says whether the fused call runs the pin.
  ConvolutionDescriptor conv = in.make_convolution(in.base_math);
  if (pass == Pass::kForward && in.fused_forward()) {
    std::optional<Scratch> scratch;
    try {
      scratch = scratch_tensors(ctx, in);
    } catch (const OutOfMemoryError&) {
      reject("cannot be tried through the fused call (cudnnConvolutionBiasActivationForward): no memory for its "
             "scratch tensors");
    }
    if (!ensure_workspace(ctx, *scratch, bytes)) reject(cat("needs ", bytes_str(bytes), " of workspace: out of memory"));
    const cudnnStatus_t ran = run_legacy(in, conv.get(), Pass::kForward, algo, *scratch, bytes, 0.0f);
    CUDA_CHECK(cudaStreamSynchronize(stream_of(ctx)));
    if (ran != CUDNN_STATUS_SUCCESS) {
      reject(cat("is not run by the fused call (cudnnConvolutionBiasActivationForward) here: ",
                 cudnnGetErrorString(ran)));
    }
  }
  const bool tensor_op = entry != listed.end() && is_tensor_op(entry->math);
  list.push_back({algo, algo_name, true, bytes, -1.0f, "chosen (pinned)", deterministic, tensor_op});
  return {std::move(conv), algo, bytes};
}

// A searched pass: the first candidate that passes every check, in the
// search's order. `notes` collects why supported candidates before it were skipped.
PassChoice choose_searched(Context& ctx, const PrepareOptions& options, const SearchInput& in, Pass pass,
                           const std::vector<Perf>& perfs, const std::string& how, LayerGraphs& graphs,
                           std::vector<Conv2d::AlgorithmCandidate>& list, std::string& notes) {
  std::optional<PassChoice> chosen;
  // The last checks of a candidate that can run: its workspace within the
  // limit and to be had; then it is the choice.
  auto take = [&](Conv2d::AlgorithmCandidate& c, size_t bytes, auto&& make_choice) {
    if (bytes > options.workspace_limit) {
      c.verdict = cat("needs ", bytes_str(bytes), ", limit ", bytes_str(options.workspace_limit));
    } else if (!try_reserve(ctx, bytes)) {
      c.verdict = cat("out of memory for ", bytes_str(bytes), " of workspace");
    } else {
      c.verdict = "chosen";
      c.workspace_bytes = bytes;
      chosen = make_choice();
    }
  };
  for (const Perf& perf : perfs) {
    const bool engine = perf.is_engine();
    Conv2d::AlgorithmCandidate c{engine ? -1 : perf.algo,
                                 engine ? engine_config_name(perf.engine) : algorithm_name(pass, perf.algo),
                                 perf.status == CUDNN_STATUS_SUCCESS,
                                 perf.memory,
                                 perf.time_ms,
                                 "",
                                 perf.deterministic,
                                 engine ? (perf.engine.numerical_notes & kNoteTensorCore) != 0 : is_tensor_op(perf.math),
                                 engine ? perf.engine.engine : -1};
    // The selection's reason where it gave one (a measured list read back
    // from the autotune cache has none: the run's rules are asked again).
    const std::optional<std::string> refused =
        !engine ? std::nullopt : perf.refused ? perf.refused : config_refusal(options, in, pass, perf.engine);
    if (chosen) {
      c.verdict = "not tried";
    } else if (perf.status != CUDNN_STATUS_SUCCESS) {
      c.verdict = cudnnGetErrorString(perf.status);
    } else if (refused) {
      c.verdict = *refused;
    } else if (const std::optional<std::string> rule = engine ? std::nullopt : legacy_refusal(options, in, perf)) {
      c.verdict = *rule;
    } else if (perf.memory > options.workspace_limit) {
      c.verdict = cat("needs ", bytes_str(perf.memory), ", limit ", bytes_str(options.workspace_limit));
    } else if (engine) {
      // Build the plan it runs with (and, for backward-data where it may add
      // into a gradient, its twin that does); take the larger workspace.
      GraphFailure failure;
      std::shared_ptr<const GraphPlan> plan, adding;
      if (auto graph = graphs.get(in, pass, search_beta(in, pass), failure)) {
        plan = GraphPlan::make(in.descriptors.handle, graph, perf.engine, failure);
      }
      const bool twin = pass == Pass::kBackwardData && in.data_adds;
      if (plan && twin) {
        if (auto graph = graphs.get(in, pass, 1.0f, failure)) {
          adding = GraphPlan::make(in.descriptors.handle, graph, perf.engine, failure);
        }
      }
      const size_t bytes = std::max({plan ? plan->workspace() : 0, adding ? adding->workspace() : 0, perf.memory});
      if (!plan) {
        c.verdict = cat("plan: ", failure.text());
      } else if (twin && !adding) {
        c.verdict = cat("cannot add into a gradient (beta 1): ", failure.text());
      } else {
        take(c, bytes, [&] {
          return PassChoice{in.make_convolution(in.base_math), -1, bytes, std::move(plan), std::move(adding)};
        });
      }
    } else {
      // Confirm with the descriptor it will run with; take the larger need.
      ConvolutionDescriptor conv = in.make_convolution(runs_result_math(in) ? perf.math : in.base_math);
      size_t bytes = 0;
      const cudnnStatus_t status = workspace_size(in.descriptors, conv.get(), pass, perf.algo, bytes);
      bytes = std::max(bytes, perf.memory);
      if (status != CUDNN_STATUS_SUCCESS) {
        c.verdict = cat("workspace query: ", cudnnGetErrorString(status));
      } else {
        take(c, bytes, [&] { return PassChoice{std::move(conv), perf.algo, bytes, nullptr, nullptr}; });
      }
    }
    if (!chosen && c.supported) notes += cat(notes.empty() ? "" : "; ", c.name, ": ", c.verdict);
    list.push_back(std::move(c));
  }
  if (chosen) return std::move(*chosen);

  std::string tried;
  bool any_not_deterministic = false;
  for (const Conv2d::AlgorithmCandidate& c : list) {
    tried += cat(tried.empty() ? "" : "; ", c.name, ": ", c.verdict);
    any_not_deterministic = any_not_deterministic || c.verdict == kNotDeterministic;
  }
  const std::string_view pass_name = kPassLongNames[index_of(pass)];
  if (any_not_deterministic) {  // the option removed candidates that could have run: a setting to change
    throw ConfigError(cat(in.layer, " (Conv2d): no deterministic cuDNN ", pass_name, " algorithm can run (", how,
                          " search: ", tried, "); compile without deterministic to allow the others"));
  }
  throw Error(cat(in.layer, " (Conv2d): no cuDNN ", pass_name, " algorithm can run (", how, " search: ",
                  tried.empty() ? "no candidates" : tried, ")"));
}

}  // namespace

AlgorithmChoice choose_algorithms(Context& ctx, const PrepareOptions& options, const SearchInput& in,
                                  std::array<std::vector<Conv2d::AlgorithmCandidate>, 3>& candidates) {
  const ConvolutionDescriptor search = in.make_convolution(in.base_math);
  const bool measured = options.algo_search == AlgoSearch::kMeasured;
  const bool all_pinned = std::count(in.pins.begin(), in.pins.end(), Conv2d::kChoose) == 0;
  // Whose candidates: the measured search times both APIs' unless one is asked for;
  // the heuristic choice ranks the legacy algorithms unless the graph API is asked for.
  const bool legacy = options.cudnn_api != CudnnApi::kGraph;
  const bool graph = options.cudnn_api == CudnnApi::kGraph || (measured && options.cudnn_api == CudnnApi::kAuto);
  auto whose_of = [](bool legacy_ones, bool graph_ones) {
    return legacy_ones && graph_ones ? "legacy+graph" : legacy_ones ? "legacy" : "graph";
  };
  const std::string how = all_pinned ? "pinned"
                          : measured ? cat("measured (", legacy && graph ? "legacy algorithms and graph-API engines"
                                                         : legacy        ? "legacy algorithms"
                                                                         : "graph-API engines",
                                           ")")
                          : graph ? "heuristic (graph API)"
                                  : "heuristic";
  // Made at the first pass the cache does not hold (Note [Autotune cache]).
  std::optional<Scratch> scratch;
  AutotuneCache* cache = measured ? &AutotuneCache::open(options.autotune_cache) : nullptr;
  std::string cached;    // the passes whose results came from the cache
  std::string uncached;  // the passes measured short of memory, whose results are not kept
  LayerGraphs graphs;

  AlgorithmChoice choice;
  std::array<std::string, 3> notes;  // per pass: what was skipped before the choice
  std::array<std::string, 3> graph_failures;  // per pass: why the graph API offered nothing
  std::string fused_trial;  // why a fused forward's heuristic candidates went untried
  auto choose_pass = [&](const SearchInput& input, Pass pass) {
    const size_t i = index_of(pass);
    if (input.pins[i] != Conv2d::kChoose) return choose_pinned(ctx, options, input, pass, search.get(), candidates[i]);
    // A forward whose bias and ReLU are fused runs on a legacy call
    // (cudnnConvolutionBiasActivationForward): its candidates are the legacy
    // algorithms, whichever API is asked for.
    const bool fused_forward = pass == Pass::kForward && input.fused_forward();
    const bool pass_legacy = legacy || fused_forward;
    const bool pass_graph = graph && !fused_forward;
    std::vector<Perf> perfs;
    if (measured) {
      ConvProblem problem = input.problem;
      problem.device = device_name(ctx);
      problem.cudnn = cudnn_version();
      problem.pass = kPassLongNames[i];
      problem.math = static_cast<int>(input.base_math);
      problem.candidates = whose_of(pass_legacy, pass_graph);
      problem.fused_bias_relu = fused_forward;
      problem.deterministic = options.deterministic;
      problem.workspace_limit = options.workspace_limit;
      const std::string key = problem.key();
      if (const std::vector<MeasuredAlgorithm>* kept = cache->find(key)) {
        perfs = from_measured(*kept);
        cached += cat(cached.empty() ? "" : ", ", kPassNames[i]);
      } else {
        if (!scratch) scratch = allocate_scratch(ctx, options, in, search.get());
        // The legacy search runs with the workspace held now; the engines' grow it as they go.
        const bool legacy_short = pass_legacy && scratch->workspace_bytes < scratch->wanted[i];
        scratch->short_of_memory = false;  // this pass's engines, from here
        if (pass_legacy) {
          perfs = measure(input.descriptors, search.get(), pass, *scratch);
          retime_legacy(ctx, input, pass, *scratch, perfs);
        }
        if (pass_graph) {
          std::vector<Perf> engines =
              measure_engines(ctx, options, input, pass, graphs, *scratch, graph_failures[i]);
          perfs.insert(perfs.end(), engines.begin(), engines.end());
        }
        sort_by_time(perfs);
        if (legacy_short || scratch->short_of_memory) {
          uncached += cat(uncached.empty() ? "" : ", ", kPassNames[i]);
        } else {
          cache->insert(key, to_measured(perfs));
        }
      }
    } else if (pass_legacy) {
      perfs = heuristics(input.descriptors, search.get(), pass);
      if (fused_forward) try_fused_call(ctx, options, input, perfs, fused_trial);
    } else {
      GraphFailure failure;
      if (auto g = graphs.get(input, pass, search_beta(input, pass), failure)) {
        for (const SelectedConfig& selected : offered_configs(options, input, pass, *g, failure)) {
          perfs.push_back(engine_perf(selected.config, selected.refusal));
        }
      }
      if (perfs.empty()) {
        graph_failures[i] = failure.status != CUDNN_STATUS_SUCCESS ? failure.text() : "cuDNN's heuristics offer none";
      }
    }
    return choose_searched(ctx, options, input, pass, perfs, how, graphs, candidates[i], notes[i]);
  };
  for (Pass pass : kPasses) {
    const size_t i = index_of(pass);
    if (skipped(options, pass)) continue;
    if (pass != Pass::kForward || !in.fused_forward() || in.pins[i] != Conv2d::kChoose) {
      choice.passes[i] = choose_pass(in, pass);
      continue;
    }
    // Note [When cuDNN refuses the fused call]: the plain call's choice, and
    // the bias and ReLU apart, where the fused call runs no candidate.
    const std::string cached_before = cached, uncached_before = uncached;
    try {
      choice.passes[i] = choose_pass(in, pass);
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const Error& refused) {
      // Where the trial could not run (no memory for its scratch), that is why.
      choice.fused_call_refused = fused_trial.empty() ? std::string(refused.what()) : fused_trial;
      candidates[i].clear();
      notes[i].clear();
      fused_trial.clear();
      cached = cached_before;
      uncached = uncached_before;
      SearchInput plain = in;
      plain.fused_bias = nullptr;
      plain.fused_relu = nullptr;
      choice.passes[i] = choose_pass(plain, pass);
    }
  }

  // "fwd IMPLICIT_PRECOMP_GEMM (0 B), bwd-data ALGO_1 (2.00 MiB), bwd-filter ALGO_1 (0 B), heuristic";
  // with 16-bit data each pass whose result reports tensor-op math says so, and the data type follows
  // how: "fwd IMPLICIT_PRECOMP_GEMM (0 B, tensor-op), ..., heuristic, bf16".
  std::string& summary = choice.summary;
  for (Pass pass : kPasses) {
    const size_t i = index_of(pass);
    if (skipped(options, pass)) continue;
    const Conv2d::AlgorithmCandidate& c =
        *std::find_if(candidates[i].begin(), candidates[i].end(),
                      [](const Conv2d::AlgorithmCandidate& x) { return x.verdict.starts_with("chosen"); });
    summary += cat(summary.empty() ? "" : ", ", kPassNames[i], " ", c.name, " (", bytes_str(c.workspace_bytes),
                   c.time_ms >= 0 ? ", " + ms_str(c.time_ms) : "", in.pins[i] != Conv2d::kChoose ? ", pinned" : "",
                   is_16_bit(in) && c.tensor_op ? ", tensor-op" : "", ")");
  }
  const std::string_view data = !is_16_bit(in) ? "" : in.data == DType::kBFloat16 ? ", bf16" : ", fp16";
  summary += cat(", ", how, in.tf32 ? ", tf32" : "", data, options.deterministic ? ", deterministic" : "");
  for (Pass pass : kPasses) {
    const size_t i = index_of(pass);
    if (!notes[i].empty()) summary += cat("; ", kPassNames[i], " skipped ", notes[i]);
    if (!graph_failures[i].empty()) summary += cat("; ", kPassNames[i], " graph API: ", graph_failures[i]);
  }
  if (in.fused_forward() && !legacy && choice.fused_call_refused.empty()) {
    summary += "; fwd on the legacy API, whose call fuses the bias and ReLU";
  }
  if (!fused_trial.empty()) summary += cat("; fwd ", fused_trial);
  if (options.phase == Phase::kInference) summary += "; no backward (inference)";
  if (!uncached.empty()) {
    summary += cat("; ", uncached, " measured short of workspace memory (candidates that needed more went "
                   "untimed): not kept for later layers or runs");
  }
  if (!cached.empty()) {
    summary += cat("; ", cached, " as measured before for the same problem (",
                   options.autotune_cache.empty() ? "this run's autotune cache" : options.autotune_cache, ")");
  }
  return choice;
}

}  // namespace glassbox::conv2d_cuda
