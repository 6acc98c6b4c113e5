// layers/conv2d_cuda.cpp: Conv2d with cuDNN's (legacy) convolution API.
//
// prepare_cuda fixes everything: descriptors, one algorithm per pass (forward,
// backward-data, backward-filter) and the workspace they need. Candidates come
// from cuDNN's ranked heuristics (cudnnGetConvolution*Algorithm_v7) or, on
// request, from timing them (cudnnFindConvolution*AlgorithmEx on scratch
// tensors allocated here and freed at the end of prepare). The first candidate
// that cuDNN supports, that uses the math the context's precision allows, whose
// workspace is within the limit and can actually be reserved, is taken; every
// verdict is kept for reports (Conv2d::algorithm_candidates, algorithms()).
//
// Note [Math type per pass]: cuDNN decides between FMA and tensor-op kernels
// from the algorithm *and* the descriptor's math type, and its search reports
// the math type each result was obtained with. So each pass gets its own
// convolution descriptor carrying its chosen result's math type (kTf32). In the
// reference precision (kFp32) every descriptor stays CUDNN_FMA_MATH, and a
// result that reports tensor-op math is skipped; in either precision a result
// that would down-convert float data (TENSOR_OP_MATH_ALLOW_CONVERSION) is.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "layers/conv2d.h"
#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

using Pass = Conv2d::Pass;
constexpr std::array<Pass, 3> kPasses = {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter};
constexpr std::array<std::string_view, 3> kPassNames = {"fwd", "bwd-data", "bwd-filter"};
constexpr std::array<std::string_view, 3> kPassLongNames = {"forward", "backward-data", "backward-filter"};
size_t index_of(Pass pass) { return static_cast<size_t>(pass); }

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

// One search result, whichever pass it came from.
struct Perf {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  float time_ms = -1.0f;
  size_t memory = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
};
template <typename CudnnPerf>
std::vector<Perf> to_perfs(const std::vector<CudnnPerf>& results, int count, bool measured) {
  std::vector<Perf> perfs;
  for (int i = 0; i < count; ++i) {
    const CudnnPerf& r = results[static_cast<size_t>(i)];
    perfs.push_back({static_cast<int>(r.algo), r.status, measured ? r.time : -1.0f, r.memory, r.mathType});
  }
  return perfs;
}

// The descriptors every cuDNN convolution call takes.
struct ConvDescriptors {
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
};

// Scratch tensors for the measured search: x, w, y and a workspace.
struct Scratch {
  Tensor x, w, y, workspace;
  size_t workspace_bytes = 0;
};

std::vector<Perf> heuristics(const ConvDescriptors& d, cudnnConvolutionDescriptor_t conv, Pass pass) {
  const int wanted = algorithm_count(pass);
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
  const int wanted = algorithm_count(pass);
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

struct ConvState final : BackendState {
  TensorDescriptor x, y, bias;  // bias: (1, K, 1, 1), broadcast over N, H, W
  FilterDescriptor w;
  std::array<ConvolutionDescriptor, 3> conv;  // per pass, see Note [Math type per pass]
  std::array<int, 3> algo{};
  std::array<size_t, 3> workspace{};
  std::string summary;
  std::string algorithms() const override { return summary; }

  ConvDescriptors descriptors(cudnnHandle_t handle) const { return {handle, x.get(), y.get(), w.get()}; }
  void* workspace_for(const Context& ctx, Pass pass) const {
    return workspace[index_of(pass)] > 0 ? ctx.workspace() : nullptr;
  }
};

}  // namespace

void Conv2d::prepare_cuda(Context& ctx, const PrepareOptions& options) {
  for (auto& list : candidates_) list.clear();
  const Options& o = options_;
  const Shape& xs = input_shapes()[0];
  const Shape& ys = output_shape();
  const int cg = static_cast<int>(xs[1] / o.groups);
  auto state = std::make_unique<ConvState>();
  state->x = make_tensor_descriptor(xs);
  state->y = make_tensor_descriptor(ys);
  state->bias = make_tensor_descriptor(Shape{1, o.out_channels});
  state->w = make_descriptor<FilterDescriptor>(cudnnCreateFilterDescriptor);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(state->w.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, o.out_channels, cg,
                                         o.kernel.h, o.kernel.w));
  // kFp32 is the reference: FMA kernels only. kTf32: cuDNN's default math,
  // which lets float convolutions use TF32 tensor cores (Ampere and later).
  const bool tf32 = ctx.precision() == Precision::kTf32;
  const cudnnMathType_t base_math = tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  auto make_conv = [&](cudnnMathType_t math) {
    auto conv = make_descriptor<ConvolutionDescriptor>(cudnnCreateConvolutionDescriptor);
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv.get(), o.pad.h, o.pad.w, o.stride.h, o.stride.w,
                                                o.dilation.h, o.dilation.w, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv.get(), o.groups));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), math));
    return conv;
  };
  const ConvolutionDescriptor search_conv = make_conv(base_math);
  const cudnnHandle_t handle = cudnn_of(ctx);
  const ConvDescriptors d = state->descriptors(handle);

  int dims[4] = {};
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(search_conv.get(), d.x, d.w, &dims[0], &dims[1], &dims[2],
                                                    &dims[3]));
  if (Shape{dims[0], dims[1], dims[2], dims[3]} != ys) {
    fail(cat("cuDNN computes output shape (", dims[0], ", ", dims[1], ", ", dims[2], ", ", dims[3],
             "), shape inference ", ys.str()));
  }

  const std::array<int, 3> pins = {pins_.forward, pins_.backward_data, pins_.backward_filter};
  const bool measured = options.algo_search == AlgoSearch::kMeasured;
  const bool all_pinned = std::count(pins.begin(), pins.end(), kChoose) == 0;
  const std::string how = all_pinned ? "pinned" : measured ? "measured" : "heuristic";

  // The measured search runs on scratch tensors, with as much workspace as the
  // largest candidate wants within the limit (less if that cannot be had).
  Scratch scratch;
  if (measured && !all_pinned) {
    size_t wanted = 0;
    for (Pass pass : kPasses) {
      if (pins[index_of(pass)] != kChoose) continue;
      for (int algo = 0; algo < algorithm_count(pass); ++algo) {
        size_t bytes = 0;
        if (workspace_size(d, search_conv.get(), pass, algo, bytes) == CUDNN_STATUS_SUCCESS &&
            bytes <= options.workspace_limit) {
          wanted = std::max(wanted, bytes);
        }
      }
    }
    const Shape w_shape{o.out_channels, cg, o.kernel.h, o.kernel.w};
    scratch.x = ctx.allocate(xs, DType::kFloat32, MemoryCategory::kWorkspace);
    scratch.w = ctx.allocate(w_shape, DType::kFloat32, MemoryCategory::kWorkspace);
    scratch.y = ctx.allocate(ys, DType::kFloat32, MemoryCategory::kWorkspace);
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
  }

  std::array<std::string, 3> notes;  // per pass: what was skipped before the choice
  for (Pass pass : kPasses) {
    const size_t i = index_of(pass);
    const std::string_view pass_name = kPassLongNames[i];
    std::vector<AlgorithmCandidate>& list = candidates_[i];

    if (pins[i] != kChoose) {
      const int algo = pins[i];
      const std::string algo_name = algorithm_name(pass, algo);
      auto reject = [&](const std::string& why) {
        throw ConfigError(cat(name(), " (Conv2d): pinned ", pass_name, " algorithm ", algo, " (", algo_name,
                              ") ", why));
      };
      if (algo < 0 || algo >= algorithm_count(pass)) reject(cat("is not a cuDNN ", pass_name, " algorithm"));
      size_t bytes = 0;
      const cudnnStatus_t status = workspace_size(d, search_conv.get(), pass, algo, bytes);
      if (status != CUDNN_STATUS_SUCCESS) reject(cat("is not supported here: ", cudnnGetErrorString(status)));
      if (bytes > options.workspace_limit) {
        reject(cat("needs ", bytes_str(bytes), " of workspace, the limit is ", bytes_str(options.workspace_limit)));
      }
      if (!try_reserve(ctx, bytes)) reject(cat("needs ", bytes_str(bytes), " of workspace: out of memory"));
      list.push_back({algo, algo_name, true, bytes, -1.0f, "chosen (pinned)"});
      state->conv[i] = make_conv(base_math);
      state->algo[i] = algo;
      state->workspace[i] = bytes;
      continue;
    }

    const std::vector<Perf> perfs =
        measured ? measure(d, search_conv.get(), pass, scratch) : heuristics(d, search_conv.get(), pass);
    std::optional<size_t> chosen;
    for (const Perf& perf : perfs) {
      AlgorithmCandidate c{perf.algo, algorithm_name(pass, perf.algo), perf.status == CUDNN_STATUS_SUCCESS,
                           perf.memory, perf.time_ms, ""};
      if (chosen) {
        c.verdict = "not tried";
      } else if (perf.status != CUDNN_STATUS_SUCCESS) {
        c.verdict = cudnnGetErrorString(perf.status);
      } else if (!tf32 && is_tensor_op(perf.math)) {
        c.verdict = "uses tensor-op math, TF32 is off";
      } else if (perf.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
        c.verdict = "would down-convert float data";
      } else if (perf.memory > options.workspace_limit) {
        c.verdict = cat("needs ", bytes_str(perf.memory), ", limit ", bytes_str(options.workspace_limit));
      } else {
        // Confirm with the descriptor it will run with; take the larger need.
        ConvolutionDescriptor conv = make_conv(tf32 ? perf.math : base_math);
        size_t bytes = 0;
        const cudnnStatus_t status = workspace_size(d, conv.get(), pass, perf.algo, bytes);
        bytes = std::max(bytes, perf.memory);
        if (status != CUDNN_STATUS_SUCCESS) {
          c.verdict = cat("workspace query: ", cudnnGetErrorString(status));
        } else if (bytes > options.workspace_limit) {
          c.verdict = cat("needs ", bytes_str(bytes), ", limit ", bytes_str(options.workspace_limit));
        } else if (!try_reserve(ctx, bytes)) {
          c.verdict = cat("out of memory for ", bytes_str(bytes), " of workspace");
        } else {
          c.verdict = "chosen";
          c.workspace_bytes = bytes;
          chosen = list.size();
          state->conv[i] = std::move(conv);
          state->algo[i] = perf.algo;
          state->workspace[i] = bytes;
        }
      }
      if (!chosen && c.supported) notes[i] += cat(notes[i].empty() ? "" : "; ", c.name, ": ", c.verdict);
      list.push_back(std::move(c));
    }
    if (!chosen) {
      std::string tried;
      for (const AlgorithmCandidate& c : list) tried += cat(tried.empty() ? "" : "; ", c.name, ": ", c.verdict);
      throw Error(cat(name(), " (Conv2d): no cuDNN ", pass_name, " algorithm can run (", how, " search: ",
                      tried.empty() ? "no candidates" : tried, ")"));
    }
  }

  // "fwd IMPLICIT_PRECOMP_GEMM (0 B), bwd-data ALGO_1 (2.00 MiB), bwd-filter ALGO_1 (0 B), heuristic"
  std::string summary;
  for (Pass pass : kPasses) {
    const size_t i = index_of(pass);
    const AlgorithmCandidate& c =
        *std::find_if(candidates_[i].begin(), candidates_[i].end(),
                      [](const AlgorithmCandidate& x) { return x.verdict.starts_with("chosen"); });
    summary += cat(i == 0 ? "" : ", ", kPassNames[i], " ", c.name, " (", bytes_str(c.workspace_bytes),
                   c.time_ms >= 0 ? ", " + ms_str(c.time_ms) : "", pins[i] != kChoose ? ", pinned" : "", ")");
  }
  summary += cat(", ", how, tf32 ? ", tf32" : "");
  for (Pass pass : kPasses) {
    const size_t i = index_of(pass);
    if (!notes[i].empty()) summary += cat("; ", kPassNames[i], " skipped ", notes[i]);
  }
  state->summary = std::move(summary);
  set_workspace_bytes(*std::max_element(state->workspace.begin(), state->workspace.end()));
  backend_ = std::move(state);
}

namespace {
const ConvState& checked_state(const std::unique_ptr<BackendState>& backend, const Context& ctx, size_t needed,
                               const Layer& layer) {
  if (ctx.workspace_bytes() < needed) {
    throw Error(cat(layer.name(), " (Conv2d): needs ", bytes_str(needed), " of workspace, the context has ",
                    bytes_str(ctx.workspace_bytes()), " (reserve workspace_bytes() after prepare)"));
  }
  return state_as<ConvState>(backend);
}
}  // namespace

void Conv2d::forward_cuda(Context& ctx, const ForwardArgs& args) {
  const ConvState& s = checked_state(backend_, ctx, workspace_bytes(), *this);
  const cudnnHandle_t handle = cudnn_of(ctx);
  const size_t f = index_of(Pass::kForward);
  CUDNN_CHECK(cudnnConvolutionForward(handle, &kOne, s.x.get(), args.inputs[0].raw(), s.w.get(),
                                      args.params[0].raw(), s.conv[f].get(),
                                      static_cast<cudnnConvolutionFwdAlgo_t>(s.algo[f]),
                                      s.workspace_for(ctx, Pass::kForward), s.workspace[f], &kZero, s.y.get(),
                                      args.output.raw()));
  if (options_.bias) {
    CUDNN_CHECK(cudnnAddTensor(handle, &kOne, s.bias.get(), args.params[1].raw(), &kOne, s.y.get(),
                               args.output.raw()));
  }
}

void Conv2d::backward_cuda(Context& ctx, const BackwardArgs& args) {
  const ConvState& s = checked_state(backend_, ctx, workspace_bytes(), *this);
  const cudnnHandle_t handle = cudnn_of(ctx);
  if (args.input_grads[0].defined()) {
    const size_t i = index_of(Pass::kBackwardData);
    CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &kOne, s.w.get(), args.params[0].raw(), s.y.get(),
                                             args.output_grad.raw(), s.conv[i].get(),
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(s.algo[i]),
                                             s.workspace_for(ctx, Pass::kBackwardData), s.workspace[i],
                                             beta_for(args.input_grad_modes[0]), s.x.get(),
                                             args.input_grads[0].raw()));
  }
  const size_t i = index_of(Pass::kBackwardFilter);
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &kOne, s.x.get(), args.inputs[0].raw(), s.y.get(),
                                             args.output_grad.raw(), s.conv[i].get(),
                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(s.algo[i]),
                                             s.workspace_for(ctx, Pass::kBackwardFilter), s.workspace[i], &kOne,
                                             s.w.get(), args.param_grads[0].raw()));
  if (options_.bias) {
    CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &kOne, s.y.get(), args.output_grad.raw(), &kOne,
                                             s.bias.get(), args.param_grads[1].raw()));
  }
}

}  // namespace glassbox
