// layers/conv2d/conv2d_im2col.cpp: Glassbox's own CPU convolution, tiled im2col + Eigen GEMM.
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
// im2col and col2im themselves are layers/conv2d/im2col.cpp. A 1x1 layer at stride 1
// without padding ("pointwise") is its own unfolding: x is multiplied in place.
// This path runs every layer in a build without oneDNN, 1x1 layers in one with
// it, and is the reference the oneDNN path is tested against (layers/conv2d/conv2d.h).
#include <omp.h>

#include <algorithm>

#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/conv2d_depthwise.h"
#include "layers/conv2d/im2col.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"

namespace glassbox {
namespace {

// Output pixels per work item: on VGG16's layers (GEMMs alone, AVX-512) 512
// beats 256 and 1024, and from 768 on a tile falls out of cache. Tiles are
// balanced (an image's pixels split evenly), so each is at most this.
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

void Conv2d::plan_im2col() {
  CpuPlan& pl = plan_;
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

void Conv2d::forward_im2col(const ForwardArgs& args, float* workspace) const {
  const CpuPlan& pl = plan_;
  const float* x = args.inputs[0].data<float>();
  const float* w = args.params[0].data<float>();
  const float* b = options_.bias ? args.params[1].data<float>() : nullptr;
  float* y = args.output.data<float>();
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
        product_into(y_tile, w_g, ConstStridedMap(xg + j0, pl.cg, len, Eigen::OuterStride<>(hw)));
      } else {
        im2col(xg, pl.cg, u, j0, len, col);
        product_into(y_tile, w_g, ConstMatrixMap(col, pl.crs, len));
      }
      if (b != nullptr) y_tile.colwise() += ConstVectorMap(b + g * pl.kg, pl.kg);
    }
  }
}

void Conv2d::backward_data_im2col(const BackwardArgs& args, float* workspace) const {
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
          product_into(dx_tile, w_block.transpose(), dy_tile, mode == GradMode::kAdd);
        } else {
          product_into(MatrixMap(dcol, channels * rs, len), w_block.transpose(), dy_tile);
          col2im_add(dcol, channels, u, j0, len, dx_block);
        }
      }
    }
  }
}

// Note [Reproducible weight gradients]: dW_g sums every (image, tile) item, and
// float addition is not associative. Under schedule(dynamic) thread timing
// would choose which partial takes which item, and losses would drift from
// run to run. So indices alone decide: slot s of pl.threads (fixed at
// prepare, whatever team OpenMP gives) sums items [items*s/slots,
// items*(s+1)/slots) in order, and dW adds the partials in slot order.
// Another thread count groups the sum differently. Items cost about the same
// (balanced tiles), so the static split balances threads as well as dynamic
// scheduling would.
void Conv2d::backward_filter_im2col(const BackwardArgs& args, float* workspace) const {
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
          product_into(dw_g, dy_tile, col_tile.transpose(), !overwrite);
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
