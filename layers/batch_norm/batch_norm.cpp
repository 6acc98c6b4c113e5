// layers/batch_norm/batch_norm.cpp: options, shapes, state and the CPU path.
//
// CPU: channels in parallel. A channel's values are N runs of H*W contiguous
// floats, C*H*W apart. Statistics are blocked sums (float lanes over short
// runs, double beyond) of values shifted by the channel's first value
// (shifting keeps E[x^2] - E[x]^2 from cancelling when the mean is large
// against the spread); then y = a (x - mean) + shift, per channel a. Backward
// likewise: two sums per channel, then dx = k1 dy + k2 (x - mean) + k3.
// Channels-last values take layers/batch_norm/batch_norm_nhwc.cpp's passes instead.
#include "layers/batch_norm/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "layers/relu.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

// Sums of a and of a * b over one channel's values, where a = u - u0 and
// b = v - v0, the values lying in `runs` runs of `len` floats, `stride` apart
// (a channel of an NCHW tensor: N runs of H*W). Blocked summation: float lanes
// sum at most kBlocksPerFlush values each, then are added in double, so the
// rounding error grows with that block, not with N*H*W. The lanes run on
// across runs, so short runs (7x7 and 14x14 channels) stay on the vector
// path; only each run's last few values (len % 16) are summed one by one.
// A float[16] per run, reduced to double at each run's end, would be
// vectorised by GCC 12 with permutes and take about twice as long.
struct Sums {
  double a = 0.0, ab = 0.0;
};
// u's runs lie u_stride apart, v's v_stride apart (a fused ReLU's backward
// sums a masked copy of dy, packed, against x: Note [A ReLU's backward fused
// into its producer], graph/fusion.h).
Sums centred_sums(const float* u, int64_t u_stride, float u0, const float* v, int64_t v_stride, float v0,
                  int64_t runs, int64_t len) {
  constexpr int kLanes = 16;  // one AVX-512 register
  constexpr int kBlocksPerFlush = 64;
  using Lanes = Eigen::Array<float, kLanes, 1>;
  using LanesMap = Eigen::Map<const Lanes>;
  Sums total;
  Lanes sa = Lanes::Zero(), sab = Lanes::Zero();
  int blocks = 0;
  auto flush = [&] {
    total.a += sa.cast<double>().sum();
    total.ab += sab.cast<double>().sum();
    sa.setZero();
    sab.setZero();
    blocks = 0;
  };
  for (int64_t run = 0; run < runs; ++run) {
    const float* pu = u + run * u_stride;
    const float* pv = v + run * v_stride;
    int64_t i = 0;
    for (; i + kLanes <= len; i += kLanes) {
      const Lanes a = LanesMap(pu + i) - u0;
      sa += a;
      sab += a * (LanesMap(pv + i) - v0);
      if (++blocks == kBlocksPerFlush) flush();
    }
    float tail_a = 0.0f, tail_ab = 0.0f;  // fewer than kLanes values
    for (; i < len; ++i) {
      const float a = pu[i] - u0;
      tail_a += a;
      tail_ab += a * (pv[i] - v0);
    }
    total.a += tail_a;
    total.ab += tail_ab;
  }
  flush();
  return total;
}

// The input as N runs per channel.
struct ChannelRuns {
  int64_t n, c, hw;
  explicit ChannelRuns(const Shape& x) : n(x[0]), c(x[1]), hw(x[2] * x[3]) {}
  int64_t m() const { return n * hw; }  // values per channel
  int64_t offset(int64_t batch, int64_t channel) const { return (batch * c + channel) * hw; }
  int64_t stride() const { return c * hw; }  // from one run of a channel to the next
  int64_t grain() const { return std::max<int64_t>(1, kElementwiseGrain / m()); }
};

}  // namespace

BatchNorm2d::BatchNorm2d(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (!(static_cast<double>(options_.eps) >= kMinEpsilon) || !std::isfinite(options_.eps)) {
    fail_option(cat("eps must be at least ", kMinEpsilon, " (cuDNN's minimum) and finite, got ", options_.eps));
  }
  if (!(options_.momentum >= 0.0f && options_.momentum <= 1.0f)) {
    fail_option(cat("momentum must be in [0, 1], got ", options_.momentum));
  }
}

bool cudnn_fuses_batch_norm_relu(Phase phase, bool channels_last, DType values, int64_t channels, bool residual) {
  const bool typed = values == DType::kFloat32 || values == DType::kBFloat16 || values == DType::kFloat16;
  return phase == Phase::kTraining && channels_last && typed && (!residual || channels % 4 == 0);
}

bool BatchNorm2d::can_fuse_relu(const Context& ctx, Phase phase) const {
  if (!ctx.is_cuda()) return true;
  return cudnn_fuses_batch_norm_relu(phase, input_channels_last(0), value_storage(), input_shapes()[0][1], false) &&
         cudnn_fused_batch_norm_refusal(ctx, input_shapes()[0], value_storage(), false).empty();
}

bool BatchNorm2d::can_fuse_residual_relu(const Context& ctx, Phase phase) const {
  if (!ctx.is_cuda()) return true;
  return cudnn_fuses_batch_norm_relu(phase, input_channels_last(0), value_storage(), input_shapes()[0][1], true) &&
         cudnn_fused_batch_norm_refusal(ctx, input_shapes()[0], value_storage(), true).empty();
}

std::string BatchNorm2d::describe() const {
  const std::string channels = bound() ? cat(input_shapes()[0][1], " channels, ") : "";
  return cat(channels, "eps ", options_.eps, ", momentum ", options_.momentum);
}

Shape BatchNorm2d::infer(std::span<const Shape> inputs) const {
  expect_rank(inputs, 0, 4, "(N, C, H, W)");
  return inputs[0];
}

std::vector<ParamSpec> BatchNorm2d::param_specs() const {
  const int64_t channels = input_shapes().at(0)[1];
  return {{"scale", Shape{channels}, Init::kOnes}, {"shift", Shape{channels}, Init::kZeros}};
}

void BatchNorm2d::allocate_state(Context& ctx) {
  const Shape per_channel{input_shapes()[0][1]};
  auto make = [&] { return ctx.allocate(per_channel, DType::kFloat32, MemoryCategory::kLayerState); };
  running_mean_ = make();
  running_var_ = make();
  saved_mean_ = make();
  saved_inv_std_ = make();
  fill_zero(ctx, running_mean_);
  from_vector<float>(ctx, std::vector<float>(static_cast<size_t>(per_channel[0]), 1.0f), running_var_);
  fill_zero(ctx, saved_mean_);
  fill_zero(ctx, saved_inv_std_);
  last_forward_trained_ = false;
}

void BatchNorm2d::check_training_batch() const {
  // A batch's variance is 0 for a channel whose values are all equal (a dead
  // ReLU's zeros): eps 0 divides by it, and every parameter turns NaN after
  // the step. Inference divides by the running variance, 1 to begin with.
  // PyTorch refuses eps 0 in training too.
  if (options_.eps == 0.0f) {
    fail_option("training needs a positive eps: a channel of equal values has a batch variance of 0, which eps 0 "
                "divides by (eps 0 is for inference only)");
  }
  const Shape& x = input_shapes()[0];
  if (x[0] * x[2] * x[3] < 2) {
    fail(cat("training needs more than one value per channel (N*H*W > 1), got input ", x.str()));
  }
}

void BatchNorm2d::check_saved_statistics() const {
  if (!last_forward_trained_) {
    fail("backward needs the batch statistics of a training-phase forward just before it; "
         "the last forward was in inference phase (or there was none)");
  }
}

std::vector<NamedTensor> BatchNorm2d::state() const {
  return {{"running_mean", running_mean_}, {"running_var", running_var_}};
}

std::vector<StateSpec> BatchNorm2d::state_specs() const {
  const Shape per_channel{input_shapes().at(0)[1]};
  return {{"running_mean", per_channel}, {"running_var", per_channel}};
}

void BatchNorm2d::prepare_cpu(Context& ctx, const PrepareOptions& options) {
  allocate_state(ctx);
  const bool sums = input_channels_last(0) && options.phase == Phase::kTraining;
  set_workspace_bytes(sums ? nhwc_workspace_bytes() : 0);
}

double BatchNorm2d::record_batch_statistics(int64_t c, double mean, double var) {
  const double m = static_cast<double>(input_shapes()[0][0] * input_shapes()[0][2] * input_shapes()[0][3]);
  const double momentum = options_.momentum;
  const double inv_std = 1.0 / std::sqrt(var + options_.eps);
  float* running_mean = running_mean_.data<float>();
  float* running_var = running_var_.data<float>();
  saved_mean_.data<float>()[c] = static_cast<float>(mean);
  saved_inv_std_.data<float>()[c] = static_cast<float>(inv_std);
  running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
  running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * var * m / (m - 1.0));
  return inv_std;
}

void BatchNorm2d::forward_cpu(Context& ctx, const ForwardArgs& args) {
  const ChannelRuns l(input_shapes()[0]);
  const bool training = args.phase == Phase::kTraining;
  if (training) check_training_batch();
  last_forward_trained_ = training;
  if (input_channels_last(0)) {
    forward_cpu_nhwc(ctx, args, training);
    return;
  }
  const double eps = options_.eps;
  const double m = static_cast<double>(l.m());
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  const float* scale = args.params[0].data<float>();
  const float* shift = args.params[1].data<float>();
  const float* running_mean = running_mean_.data<float>();
  const float* running_var = running_var_.data<float>();
  const bool relu = fused_relu();  // Note [A ReLU fused into its producer]
  // Note [A residual add fused into its batch norm]: y = max(0, . + z).
  const float* z = fused_residual() ? args.inputs[1].data<float>() : nullptr;
  parallel_for(l.c, l.grain(), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double mean = 0.0, inv_std = 0.0;
      if (training) {
        const float pivot = x[l.offset(0, c)];
        const float* runs = x + l.offset(0, c);
        const Sums s = centred_sums(runs, l.stride(), pivot, runs, l.stride(), pivot, l.n, l.hw);  // of x - pivot
        const double sum = s.a, sum_squares = s.ab;
        mean = pivot + sum / m;
        const double var = std::max(0.0, (sum_squares - sum * sum / m) / m);  // biased
        inv_std = record_batch_statistics(c, mean, var);
      } else {
        mean = running_mean[c];
        inv_std = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
      }
      // y = a (x - mean) + shift: centring first keeps a large mean from
      // cancelling in float, as a x + (shift - a mean) would.
      const float a = static_cast<float>(scale[c] * inv_std);
      const float centre = static_cast<float>(mean), b = shift[c];
      for (int64_t n = 0; n < l.n; ++n) {
        auto normalised = (ConstArrayMap(x + l.offset(n, c), l.hw) - centre) * a + b;
        if (z != nullptr) {
          as_array(y + l.offset(n, c), l.hw) = (normalised + ConstArrayMap(z + l.offset(n, c), l.hw)).max(0.0f);
        } else if (relu) {
          as_array(y + l.offset(n, c), l.hw) = normalised.max(0.0f);  // as ReLU's forward
        } else {
          as_array(y + l.offset(n, c), l.hw) = normalised;
        }
      }
    }
  });
}

void BatchNorm2d::backward_cpu(Context& ctx, const BackwardArgs& args) {
  check_saved_statistics();
  if (input_channels_last(0)) {
    backward_cpu_nhwc(ctx, args);
    return;
  }
  const ChannelRuns l(input_shapes()[0]);
  const Tensor& dx_tensor = args.input_grads[0];
  const double m = static_cast<double>(l.m());
  const float* x = args.inputs[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.defined() ? dx_tensor.data<float>() : nullptr;
  const float* scale = args.params[0].data<float>();
  float* dscale = args.param_grads[0].data<float>();
  float* dshift = args.param_grads[1].data<float>();
  const float* saved_mean = saved_mean_.data<float>();
  const float* saved_inv_std = saved_inv_std_.data<float>();
  // Note [A ReLU's backward fused into its producer]: dy is the ReLU's, taken
  // where y (the ReLU's output) is above 0. Each channel's dy is masked once
  // into a packed copy (N*H*W floats, in cache for ResNets' batches), which
  // both passes read: y and dy are read once, where the ReLU apart would have
  // read them and written its dx, and batch norm read that twice.
  const float* y = fused_relu_backward() ? args.output.data<float>() : nullptr;
  // Note [A residual add fused into its batch norm]: z's gradient is the
  // masked dy, as the add would have handed it.
  const Tensor dz_tensor = fused_residual() ? args.input_grads[1] : Tensor();
  float* dz = dz_tensor.defined() ? dz_tensor.data<float>() : nullptr;
  parallel_for(l.c, l.grain(), [&](int64_t begin, int64_t end) {
    std::vector<float> masked(y != nullptr ? static_cast<size_t>(l.m()) : 0);
    for (int64_t c = begin; c < end; ++c) {
      const double mean = saved_mean[c], inv_std = saved_inv_std[c];
      const float* g = dy + l.offset(0, c);  // the channel's runs of dy, g_stride apart
      int64_t g_stride = l.stride();
      if (y != nullptr) {
        for (int64_t n = 0; n < l.n; ++n) {
          const float* run = dy + l.offset(n, c);
          const float* mask = y + l.offset(n, c);
          float* out = masked.data() + n * l.hw;
          for (int64_t k = 0; k < l.hw; ++k) out[k] = relu_gradient(mask[k], run[k]);  // Note [Masks without branches]
          if (dz != nullptr) {
            write_or_add(args.input_grad_modes[1], as_array(dz + l.offset(n, c), l.hw), ConstArrayMap(out, l.hw));
          }
        }
        g = masked.data(), g_stride = l.hw;
      }
      // sum dy, sum dy * (x - mean)
      const Sums s = centred_sums(g, g_stride, 0.0f, x + l.offset(0, c), l.stride(), saved_mean[c], l.n, l.hw);
      const double sum_dy = s.a, sum_dy_centred = s.ab;
      const double sum_dy_xhat = sum_dy_centred * inv_std;
      dshift[c] += static_cast<float>(sum_dy);
      dscale[c] += static_cast<float>(sum_dy_xhat);
      if (dx == nullptr) continue;
      // dx = scale inv_std (dy - sum_dy / m - xhat sum_dy_xhat / m), xhat = (x - mean) inv_std
      //    = k1 dy + k2 (x - mean) + k3
      const double k1 = scale[c] * inv_std;
      const float f1 = static_cast<float>(k1);
      const float f2 = static_cast<float>(-k1 * inv_std * sum_dy_xhat / m);
      const float f3 = static_cast<float>(-k1 * sum_dy / m);
      const float centre = static_cast<float>(mean);
      for (int64_t n = 0; n < l.n; ++n) {
        const ConstArrayMap gn(g + n * g_stride, l.hw), v(x + l.offset(n, c), l.hw);
        write_or_add(args.input_grad_modes[0], as_array(dx + l.offset(n, c), l.hw), gn * f1 + (v - centre) * f2 + f3);
      }
    }
  });
}

std::vector<std::pair<int64_t, int64_t>> batch_slices(int64_t n, int64_t limit) {
  std::vector<std::pair<int64_t, int64_t>> slices;
  for (int64_t first = 0; first < n; first += limit) slices.emplace_back(first, std::min(limit, n - first));
  return slices;
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(BatchNorm2d)
std::string cudnn_batch_norm_relu_refusal(const Context&, const Shape&, DType, bool) {
  throw_not_built("cudnn_batch_norm_relu_refusal");
}
std::string cudnn_fused_batch_norm_refusal(const Context&, const Shape&, DType, bool) {
  throw_not_built("cudnn_fused_batch_norm_refusal");
}
std::string cudnn_fused_batch_norm_size_refusal(const Context&, const Shape&, DType, bool) {
  throw_not_built("cudnn_fused_batch_norm_size_refusal");
}
}  // namespace glassbox
#endif
