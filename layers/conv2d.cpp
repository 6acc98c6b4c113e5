// layers/conv2d.cpp: shapes, options and the CPU path (tiled im2col + Eigen GEMM).
//
// Per group g the convolution is a matrix product over output pixels:
//   y_g (K/G x P*Q) = W_g (K/G x C/G*R*S) * col_g (C/G*R*S x P*Q)
// where col_g unfolds the input ("im2col"): row (c, r, s), column (p, q) holds
// x[c, p*stride_h - pad_h + r*dil_h, q*stride_w - pad_w + s*dil_w] (0 outside).
// Unfolding a whole image costs memory traffic that one large threaded GEMM
// does not hide, so the work is cut into items small enough for a core's cache:
//   forward          item (n, g, tile of output pixels): unfold the tile, y_tile = W_g * col_tile
//   backward-filter  item (g, n, tile): unfold again, dW_g += dy_tile * col_tile^T; items are
//                    dealt to pl.threads fixed slots, each summing its own into a partial (slot 0
//                    into dW), added in slot order (Note [Reproducible weight gradients])
//   backward-data    item (n, g, block of input channels): for each tile, dcol = W_block^T * dy_tile,
//                    then fold back ("col2im") into the block's own dx, so no two threads
//                    write the same element
// Each thread multiplies with Eigen single-threaded (Note [Eigen's own threads]
// in tensor/eigen_maps.h): parallelism over tiles, not inside small products.
// Tiles, unfolded buffers and partial gradients live in the context workspace;
// im2col and col2im themselves are layers/im2col.cpp. Depthwise convolutions
// (one input channel per group) take a direct path instead:
// layers/conv2d_depthwise.cpp (Note [Depthwise convolution by taps]).
#include "layers/conv2d.h"

#include <omp.h>

#include <algorithm>

#include "layers/conv2d_depthwise.h"
#include "layers/im2col.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// Output pixels per work item. Measured (GEMMs alone, VGG16's layers, 2-core
// AVX-512) before this layer was written: 512 beat 256 and 1024; 768 and above
// fell out of cache. Tiles are balanced (an image's pixels split evenly), so
// each is at most this.
constexpr int64_t kTargetTile = 512;
// Work items per thread, at least, where shapes allow: a little slack for
// dynamic scheduling to balance threads (forward and backward-data, whose
// items write disjoint outputs, so the schedule cannot change a result).
constexpr int64_t kItemsPerThread = 2;
constexpr int64_t kMinTile = 64;  // pixels; smaller tiles make thin products
// Backward-data items: more of them, as they are cheap to cut finer.
constexpr int64_t kDataItemsPerThread = 4;
// ... but not so small that the product W_block^T * dy_tile has too few rows.
constexpr int64_t kMinDataRows = 128;

using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ConstStridedMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// ---- Options and shapes ------------------------------------------------------------------

Conv2d::Conv2d(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  check_options();
}

void Conv2d::check_options() const {
  const Options& o = options_;
  auto dims = [](Size2 v) { return cat(v.h, "x", v.w); };
  if (o.out_channels <= 0) fail_option(cat("out_channels must be positive, got ", o.out_channels));
  if (o.groups <= 0) fail_option(cat("groups must be positive, got ", o.groups));
  if (o.kernel.h <= 0 || o.kernel.w <= 0) fail_option(cat("kernel must be positive, got ", dims(o.kernel)));
  if (o.stride.h <= 0 || o.stride.w <= 0) fail_option(cat("stride must be positive, got ", dims(o.stride)));
  if (o.dilation.h <= 0 || o.dilation.w <= 0) {
    fail_option(cat("dilation must be positive, got ", dims(o.dilation)));
  }
  if (o.pad.h < 0 || o.pad.w < 0) fail_option(cat("pad must not be negative, got ", dims(o.pad)));
  if (o.out_channels % o.groups != 0) {
    fail_option(cat("out_channels ", o.out_channels, " is not divisible by groups ", o.groups));
  }
}

std::string Conv2d::describe() const {
  const Options& o = options_;
  std::string text = cat(o.kernel.h, "x", o.kernel.w, " s", o.stride.str(), " p", o.pad.str());
  if (o.dilation != Size2(1)) text += cat(" d", o.dilation.str());
  if (o.groups != 1) text += cat(" g", o.groups);
  const std::string in = bound() ? cat(input_shapes()[0][1]) : "?";
  text += cat(", ", in, " -> ", o.out_channels);
  if (!o.bias) text += ", no bias";
  return text;
}

Shape Conv2d::infer(std::span<const Shape> inputs) const {
  check_options();
  expect_rank(inputs, 0, 4, "(N, C, H, W)");
  const Shape& x = inputs[0];
  const Options& o = options_;
  if (x[1] % o.groups != 0) {
    fail(cat("input has ", x[1], " channels, not divisible by groups ", o.groups));
  }
  const int64_t extent_h = int64_t{o.dilation.h} * (o.kernel.h - 1) + 1;
  const int64_t extent_w = int64_t{o.dilation.w} * (o.kernel.w - 1) + 1;
  const int64_t padded_h = x[2] + 2 * int64_t{o.pad.h}, padded_w = x[3] + 2 * int64_t{o.pad.w};
  if (extent_h > padded_h || extent_w > padded_w) {
    const std::string dilated =
        o.dilation == Size2(1) ? "" : cat(" (dilated to ", extent_h, "x", extent_w, ")");
    fail(cat("kernel ", o.kernel.h, "x", o.kernel.w, dilated, " does not fit the padded input ",
             padded_h, "x", padded_w, " (input ", x[2], "x", x[3], ", pad ", o.pad.str(), ")"));
  }
  return Shape{x[0], o.out_channels, (padded_h - extent_h) / o.stride.h + 1,
               (padded_w - extent_w) / o.stride.w + 1};
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const Options& o = options_;
  const int64_t cg = input_shapes().at(0)[1] / o.groups;
  const int64_t fan_in = cg * o.kernel.h * o.kernel.w;
  std::vector<ParamSpec> specs = {
      {"weight", Shape{o.out_channels, cg, o.kernel.h, o.kernel.w}, Init::kHeNormal, fan_in}};
  if (o.bias) specs.push_back({"bias", Shape{o.out_channels}, Init::kZeros, fan_in});
  return specs;
}

int64_t Conv2d::macs() const {
  const Shape& x = input_shapes().at(0);
  const Shape& y = output_shape();
  // The output and the weight are shapes, checked to fit; the product of their
  // sizes need not (padding can make a huge output from a small input).
  const char* what = "multiply-accumulates";
  const int64_t window = checked_multiply(options_.kernel.h, options_.kernel.w, what);
  return checked_multiply(y.numel(), checked_multiply(x[1] / options_.groups, window, what), what);
}

// ---- CPU ---------------------------------------------------------------------------------

void Conv2d::prepare_cpu(Context&, const PrepareOptions&) {
  for (auto& list : candidates_) list.clear();
  const Shape& x = input_shapes()[0];
  const Shape& y = output_shape();
  const Options& o = options_;
  CpuPlan& pl = plan_;
  pl = CpuPlan{};
  pl.n = x[0], pl.c = x[1], pl.h = x[2], pl.w = x[3];
  pl.k = y[1], pl.p = y[2], pl.q = y[3];
  pl.groups = o.groups, pl.cg = pl.c / o.groups, pl.kg = pl.k / o.groups;
  pl.r = o.kernel.h, pl.s = o.kernel.w;
  pl.crs = pl.cg * pl.r * pl.s;
  pl.pointwise = o.kernel == Size2(1) && o.stride == Size2(1) && o.pad == Size2(0);
  pl.threads = std::max(1, omp_get_max_threads());
  // Depthwise at stride 1 goes direct; one input channel (groups 1) is a real
  // GEMM, and strided depthwise layers measured faster as GEMMs (conv2d_depthwise.cpp).
  pl.depthwise = pl.groups > 1 && pl.cg == 1 && o.stride == Size2(1);
  if (pl.depthwise) {
    set_workspace_bytes(static_cast<size_t>(depthwise_workspace_floats(depthwise_plan())) * sizeof(float));
    return;
  }
  // Tiles of at most kTargetTile pixels; smaller ones where the batch is too
  // small to give every thread items (VGG's 14x14 layers at batch 1 or 2).
  // Backward-filter's products sum over a tile's pixels into all of dW_g, so
  // they want long tiles: it asks only for one item per thread.
  const int64_t pixels = pl.p * pl.q;
  auto tiles_for = [&](int64_t items_per_thread) {
    const int64_t for_threads = ceil_div(int64_t{pl.threads} * items_per_thread, pl.n * pl.groups);
    return std::max({ceil_div(pixels, kTargetTile), std::min(for_threads, pixels / kMinTile), int64_t{1}});
  };
  pl.tiles = tiles_for(kItemsPerThread);
  pl.tile = ceil_div(pixels, pl.tiles);
  pl.filter_tiles = tiles_for(1);
  pl.filter_tile = ceil_div(pixels, pl.filter_tiles);
  // Backward-data items: (image, group, channel block); split channels only as
  // far as needed to give every thread work.
  const int64_t wanted = ceil_div(int64_t{pl.threads} * kDataItemsPerThread, pl.n * pl.groups);
  const int64_t most = std::max<int64_t>(1, pl.crs / kMinDataRows);
  pl.channel_blocks = std::clamp<int64_t>(wanted, 1, std::min(most, pl.cg));
  // pl.threads unfolded tiles, then backward-filter's partials (slots 1..), each
  // rounded to 16 floats so every slice starts on a 64-byte line.
  auto lines = [](int64_t floats) { return ceil_div(floats, 16) * 16; };
  pl.col_floats = pl.pointwise ? 0 : lines(pl.crs * std::max(pl.tile, pl.filter_tile));
  pl.partial_floats = lines(pl.k * pl.crs);
  const int64_t floats = pl.threads * pl.col_floats + (pl.threads - 1) * pl.partial_floats;
  set_workspace_bytes(static_cast<size_t>(floats) * sizeof(float));
}

float* Conv2d::cpu_workspace(const Context& ctx) const { return static_cast<float*>(checked_workspace(ctx)); }

namespace {
Unfold unfold_of(const Conv2d::Options& o, int64_t h, int64_t w, int64_t q) {
  return {h, w, q, o.kernel.h, o.kernel.w, o.stride.h, o.stride.w, o.pad.h, o.pad.w,
          o.dilation.h, o.dilation.w};
}
}  // namespace

DepthwisePlan Conv2d::depthwise_plan() const {
  const CpuPlan& pl = plan_;
  return {.n = pl.n, .c = pl.c, .multiplier = pl.kg, .p = pl.p, .u = unfold_of(options_, pl.h, pl.w, pl.q),
          .threads = pl.threads};
}

void Conv2d::forward_cpu(Context& ctx, const ForwardArgs& args) {
  const CpuPlan& pl = plan_;
  float* workspace = cpu_workspace(ctx);
  const float* x = args.inputs[0].data<float>();
  const float* w = args.params[0].data<float>();
  const float* b = options_.bias ? args.params[1].data<float>() : nullptr;
  float* y = args.output.data<float>();
  if (pl.depthwise) {
    depthwise_forward(depthwise_plan(), x, w, b, y, workspace);
    return;
  }
  const Unfold u = unfold_of(options_, pl.h, pl.w, pl.q);
  const int64_t hw = pl.h * pl.w, pq = pl.p * pl.q;
  const int64_t items = pl.n * pl.groups * pl.tiles;

#pragma omp parallel num_threads(pl.threads)
  {
    float* col = workspace + omp_get_thread_num() * pl.col_floats;  // (C/G*R*S, tile)
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t n = item / (pl.groups * pl.tiles), g = item / pl.tiles % pl.groups;
      const int64_t j0 = item % pl.tiles * pl.tile, len = std::min(pl.tile, pq - j0);
      const float* xg = x + (n * pl.c + g * pl.cg) * hw;  // (C/G, H, W)
      ConstMatrixMap w_g(w + g * pl.kg * pl.crs, pl.kg, pl.crs);
      StridedMatrixMap y_tile(y + (n * pl.k + g * pl.kg) * pq + j0, pl.kg, len, Eigen::OuterStride<>(pq));
      if (pl.pointwise) {
        y_tile.noalias() = w_g * ConstStridedMap(xg + j0, pl.cg, len, Eigen::OuterStride<>(hw));
      } else {
        im2col(xg, pl.cg, u, j0, len, col);
        y_tile.noalias() = w_g * ConstMatrixMap(col, pl.crs, len);
      }
      if (b != nullptr) y_tile.colwise() += ConstVectorMap(b + g * pl.kg, pl.kg);
    }
  }
}

void Conv2d::backward_cpu(Context& ctx, const BackwardArgs& args) {
  float* workspace = cpu_workspace(ctx);
  if (plan_.depthwise) {
    const float* dy = args.output_grad.data<float>();
    if (args.input_grads[0].defined()) {
      depthwise_backward_data(depthwise_plan(), args.params[0].data<float>(), dy, args.input_grad_modes[0],
                              args.input_grads[0].data<float>(), workspace);
    }
    ctx.switch_pass(glassbox::Pass::kBackwardWeights);  // the step's passes (tensor/pass.h), not Conv2d::Pass
    depthwise_backward_filter(depthwise_plan(), args.inputs[0].data<float>(), dy, args.param_grads[0].data<float>(),
                              workspace);
  } else {
    if (args.input_grads[0].defined()) backward_data_cpu(args, workspace);
    ctx.switch_pass(glassbox::Pass::kBackwardWeights);
    backward_filter_cpu(args, workspace);
  }
  if (options_.bias) {
    const CpuPlan& pl = plan_;
    const float* dy = args.output_grad.data<float>();
    float* db = args.param_grads[1].data<float>();
    const int64_t pq = pl.p * pl.q;
    parallel_for(pl.k, std::max<int64_t>(1, kElementwiseGrain / (pl.n * pq)), [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        float sum = 0.0f;
        for (int64_t n = 0; n < pl.n; ++n) {
          sum += Eigen::Map<const Eigen::ArrayXf>(dy + (n * pl.k + k) * pq, pq).sum();
        }
        db[k] += sum;
      }
    });
  }
}

void Conv2d::backward_data_cpu(const BackwardArgs& args, float* workspace) const {
  const CpuPlan& pl = plan_;
  const GradMode mode = args.input_grad_modes[0];
  const float* w = args.params[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  float* dx = args.input_grads[0].data<float>();
  const Unfold u = unfold_of(options_, pl.h, pl.w, pl.q);
  const int64_t hw = pl.h * pl.w, pq = pl.p * pl.q, rs = pl.r * pl.s;
  const int64_t items = pl.n * pl.groups * pl.channel_blocks;

#pragma omp parallel num_threads(pl.threads)
  {
    float* dcol = workspace + omp_get_thread_num() * pl.col_floats;  // (block*R*S, tile)
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t n = item / (pl.groups * pl.channel_blocks);
      const int64_t g = item / pl.channel_blocks % pl.groups, block = item % pl.channel_blocks;
      const int64_t c0 = block * pl.cg / pl.channel_blocks, c1 = (block + 1) * pl.cg / pl.channel_blocks;
      const int64_t channels = c1 - c0;
      // This item owns dx[n, g*C/G + c0 .. c1): no other thread writes there.
      float* dx_block = dx + (n * pl.c + g * pl.cg + c0) * hw;
      // W_g's columns for these channels: (K/G, channels*R*S), rows C/G*R*S apart.
      ConstStridedMap w_block(w + g * pl.kg * pl.crs + c0 * rs, pl.kg, channels * rs,
                              Eigen::OuterStride<>(pl.crs));
      if (!pl.pointwise && mode == GradMode::kWrite) std::fill_n(dx_block, channels * hw, 0.0f);
      for (int64_t t = 0; t < pl.tiles; ++t) {
        const int64_t j0 = t * pl.tile, len = std::min(pl.tile, pq - j0);
        ConstStridedMap dy_tile(dy + (n * pl.k + g * pl.kg) * pq + j0, pl.kg, len, Eigen::OuterStride<>(pq));
        if (pl.pointwise) {  // dx is its own unfolding: write or add in place
          StridedMatrixMap dx_tile(dx_block + j0, channels, len, Eigen::OuterStride<>(hw));
          write_or_add(mode, dx_tile.noalias(), w_block.transpose() * dy_tile);
        } else {
          MatrixMap(dcol, channels * rs, len).noalias() = w_block.transpose() * dy_tile;
          col2im_add(dcol, channels, u, j0, len, dx_block);
        }
      }
    }
  }
}

// Note [Reproducible weight gradients]: dW_g sums every (image, tile) item, and
// float addition is not associative. Under schedule(dynamic) thread timing
// chose which partial took which item, so losses drifted from run to run. Now
// indices alone decide: slot s of pl.threads (fixed at prepare, whatever team
// OpenMP gives) sums items [items*s/slots, items*(s+1)/slots) in order, and
// dW adds the partials in slot order. Another thread count groups the sum
// differently. Items cost about the same (balanced tiles), so the static
// split balances threads as well as dynamic scheduling did.
void Conv2d::backward_filter_cpu(const BackwardArgs& args, float* workspace) const {
  const CpuPlan& pl = plan_;
  const float* x = args.inputs[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  float* dw = args.param_grads[0].data<float>();
  const Unfold u = unfold_of(options_, pl.h, pl.w, pl.q);
  const int64_t hw = pl.h * pl.w, pq = pl.p * pl.q, group_floats = pl.kg * pl.crs;
  const int64_t tiles = pl.filter_tiles, tile = pl.filter_tile;
  const int64_t per_group = pl.n * tiles, items = pl.groups * per_group;
  const int slots = pl.threads;
  auto first_item = [&](int64_t slot) { return items * slot / slots; };
  // Partials of slots 1.., (K, C/G*R*S) each: a slot's first item in a group
  // overwrites, so they are never zeroed, and hold only the groups it touched.
  float* partials = workspace + pl.threads * pl.col_floats;

#pragma omp parallel num_threads(pl.threads)
  {
    float* col = workspace + omp_get_thread_num() * pl.col_floats;
#pragma omp for schedule(static)
    for (int slot = 0; slot < slots; ++slot) {
      float* target = slot == 0 ? dw : partials + (slot - 1) * pl.partial_floats;
      const int64_t begin = first_item(slot), end = first_item(slot + 1);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t g = item / per_group, n = item / tiles % pl.n;
        const int64_t j0 = item % tiles * tile, len = std::min(tile, pq - j0);
        const float* xg = x + (n * pl.c + g * pl.cg) * hw;
        ConstStridedMap dy_tile(dy + (n * pl.k + g * pl.kg) * pq + j0, pl.kg, len, Eigen::OuterStride<>(pq));
        MatrixMap dw_g(target + g * group_floats, pl.kg, pl.crs);
        const bool overwrite = slot != 0 && (item == begin || item % per_group == 0);
        auto accumulate = [&](const auto& col_tile) {
          if (overwrite) {
            dw_g.noalias() = dy_tile * col_tile.transpose();
          } else {
            dw_g.noalias() += dy_tile * col_tile.transpose();
          }
        };
        if (pl.pointwise) {
          accumulate(ConstStridedMap(xg + j0, pl.cg, len, Eigen::OuterStride<>(hw)));
        } else {
          im2col(xg, pl.cg, u, j0, len, col);
          accumulate(ConstMatrixMap(col, pl.crs, len));
        }
      }
    }
  }

  if (slots == 1) return;
  // Elementwise over dW, so any chunking gives the same sums: each element
  // adds the slots that touched its group, in slot order.
  parallel_for(pl.groups * group_floats, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t at = begin; at < end;) {  // group by group within [begin, end)
      const int64_t g = at / group_floats, stop = std::min(end, (g + 1) * group_floats);
      for (int slot = 1; slot < slots; ++slot) {
        const int64_t first = first_item(slot), last = first_item(slot + 1);
        if (first == last || first >= (g + 1) * per_group || last <= g * per_group) continue;  // not in g
        const float* partial = partials + (slot - 1) * pl.partial_floats;
        as_array(dw + at, stop - at) += Eigen::Map<const Eigen::ArrayXf>(partial + at, stop - at);
      }
      at = stop;
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Conv2d)
}  // namespace glassbox
#endif
