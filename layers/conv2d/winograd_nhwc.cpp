// layers/conv2d/winograd_nhwc.cpp: a 3x3, stride-1 convolution's forward on
// NHWC values by Winograd's F(4x4, 3x3) (layers/conv2d/winograd_nhwc.h).
//
// Note [Winograd F(4x4, 3x3) on NHWC values]: Winograd's algorithm makes each
// 4x4 tile of the output from the 6x6 tile of the input under it as
//   Y = A^T [ (G g G^T) . (B^T d B) ] A
// (g a 3x3 filter, d the input tile, . the element-wise product), so that
// summed over the input channels, each of the 36 positions of the 6x6 tile is
// one product: M_pos (tiles x K) = V_pos (tiles x C) * U_pos (C x K), a
// quarter of the direct convolution's multiplications. oneDNN 2.6 has such
// kernels for AVX-512 only (Note [Winograd on the CPU],
// conv2d_choices_onednn.cpp), so on an AVX2 CPU the layers where Winograd
// pays run their forward here, and their backward-data too: that is the
// forward of dy through the weights with K and C swapped and each 3x3 turned
// half a turn, padded by 2 - pad. On a Zen 3, ResNet-34's convolutions at
// batch 8 take 0.62 of their time on oneDNN's jit:avx2 in both passes
// (`python3 bench/ab_layers.py ResNet34 8 --a=--no-winograd`).
//
// Stored NHWC, a pixel's channels are contiguous, so the transforms work on
// one vector of channels at a time, and V and M are laid out (position, tile,
// channel): each position's product is one sgemm on row-major matrices. The
// tiles go by chunks small enough that a chunk's V and M stay in cache
// between the input transform, the 36 products and the output transform.
// The points are Lavin and Gray's (0, +-1, +-2, +-1/2): F(4x4, 3x3) rounds
// within the bound the direct kernels are tested to
// (tests/test_conv2d_winograd.cpp).
#include "layers/conv2d/winograd_nhwc.h"

#include <algorithm>
#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"

namespace glassbox {
namespace {

constexpr int64_t kChunkBytes = int64_t{8} << 20;
constexpr int kIn = 6;                    // the input tile's side
constexpr int kOut = 4;                   // the output tile's side
constexpr int kPositions = kIn * kIn;     // products per tile
constexpr int64_t kNoPixel = -1;          // a tap in the padding

using ConstMatrixMap = Eigen::Map<const RowMatrix>;

// L is FloatLanes (a vector of channels) or float (the channels past the last
// whole vector).
template <typename L>
L load(const float* from) {
  L v;
  std::memcpy(&v, from, sizeof v);
  return v;
}
template <typename L>
void store(float* to, L v) {
  std::memcpy(to, &v, sizeof v);
}

// r = B^T d, on 6 values d[0], d[stride], ...
template <typename L>
void input_1d(const L* d, int stride, L* r, int r_stride) {
  const L d0 = d[0], d1 = d[stride], d2 = d[2 * stride], d3 = d[3 * stride], d4 = d[4 * stride], d5 = d[5 * stride];
  r[0] = 4.0f * d0 - 5.0f * d2 + d4;
  r[r_stride] = d3 + d4 - 4.0f * (d1 + d2);
  r[2 * r_stride] = d4 - d3 + 4.0f * (d1 - d2);
  r[3 * r_stride] = d4 - d2 - 2.0f * (d1 - d3);
  r[4 * r_stride] = d4 - d2 + 2.0f * (d1 - d3);
  r[5 * r_stride] = 4.0f * d1 - 5.0f * d3 + d5;
}

// o = A^T m, on 6 values m[0], m[stride], ..., into 4.
template <typename L>
void output_1d(const L* m, int stride, L* o, int o_stride) {
  const L sum12 = m[stride] + m[2 * stride], diff12 = m[stride] - m[2 * stride];
  const L sum34 = m[3 * stride] + m[4 * stride], diff34 = m[3 * stride] - m[4 * stride];
  o[0] = m[0] + sum12 + sum34;
  o[o_stride] = diff12 + 2.0f * diff34;
  o[2 * o_stride] = sum12 + 4.0f * sum34;
  o[3 * o_stride] = diff12 + 8.0f * diff34 + m[5 * stride];
}

// u = G g, on 3 values g[0], g[stride], g[2 stride], into 6.
template <typename L>
void filter_1d(const L* g, int stride, L* u, int u_stride) {
  const L g0 = g[0], g1 = g[stride], g2 = g[2 * stride];
  u[0] = g0 / 4.0f;
  u[u_stride] = -(g0 + g1 + g2) / 6.0f;
  u[2 * u_stride] = -(g0 - g1 + g2) / 6.0f;
  u[3 * u_stride] = g0 / 24.0f + g1 / 12.0f + g2 / 6.0f;
  u[4 * u_stride] = g0 / 24.0f - g1 / 12.0f + g2 / 6.0f;
  u[5 * u_stride] = g2;
}

struct TileGrid {
  int64_t rows = 0, cols = 0;  // tiles down and across one image
};

TileGrid grid_of(const WinogradShape& s) { return {(s.p + kOut - 1) / kOut, (s.q + kOut - 1) / kOut}; }

// U[pos][c][k0 ...] = (G g G^T)[pos] for one vector (or one float) of output
// channels: the filters of a vector are gathered, so that the divisions run a
// vector at a time. `turned`: g is w[c][k] turned half a turn (the
// backward-data pass's weights, w being (C, K, 3, 3) in this shape's names).
template <typename L>
void transform_filter(const WinogradShape& s, const float* w, bool turned, int64_t c, int64_t k0, float* u) {
  constexpr int kLanes = sizeof(L) / sizeof(float);
  L g[9], columns[kIn * 3], tile[kPositions];
  for (int tap = 0; tap < 9; ++tap) {
    float lanes[kLanes];
    for (int lane = 0; lane < kLanes; ++lane) {
      const int64_t k = k0 + lane;
      lanes[lane] = turned ? w[(c * s.k + k) * 9 + (8 - tap)] : w[(k * s.c + c) * 9 + tap];
    }
    g[tap] = load<L>(lanes);
  }
  for (int j = 0; j < 3; ++j) filter_1d(g + j, 3, columns + j, 3);               // G g: 6 x 3
  for (int i = 0; i < kIn; ++i) filter_1d(columns + i * 3, 1, tile + i * kIn, 1);  // (G g) G^T: 6 x 6
  for (int pos = 0; pos < kPositions; ++pos) store(u + pos * s.c * s.k + c * s.k + k0, tile[pos]);
}

// U (position, C, K) for every pair of channels; each thread a range of input
// channels, each of whose rows of U it writes in order.
void transform_filters(const WinogradShape& s, const float* w, bool turned, float* u) {
  const int64_t k_vectors = s.k / kFloatLanes * kFloatLanes;
  parallel_for(s.c, std::max<int64_t>(1, kElementwiseGrain / (kPositions * s.k)), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      int64_t k = 0;
      for (; k < k_vectors; k += kFloatLanes) transform_filter<FloatLanes>(s, w, turned, c, k, u);
      for (; k < s.k; ++k) transform_filter<float>(s, w, turned, c, k, u);
    }
  });
}

// The offsets in x of a tile's 36 input pixels, kNoPixel in the padding.
void tile_offsets(const WinogradShape& s, const TileGrid& g, int64_t tile, int64_t* offsets) {
  const int64_t per_image = g.rows * g.cols, n = tile / per_image;
  const int64_t row0 = tile / g.cols % g.rows * kOut - s.pad_h, col0 = tile % g.cols * kOut - s.pad_w;
  for (int i = 0; i < kIn; ++i) {
    for (int j = 0; j < kIn; ++j) {
      const int64_t ih = row0 + i, iw = col0 + j;
      offsets[i * kIn + j] = ih < 0 || ih >= s.h || iw < 0 || iw >= s.w ? kNoPixel : ((n * s.h + ih) * s.w + iw) * s.c;
    }
  }
}

// V[pos][t][c0 ...] = (B^T d B)[pos] for one vector (or one float) of channels.
template <typename L>
void transform_input(const float* x, const int64_t* offsets, int64_t c0, float* v, int64_t position_stride) {
  L d[kPositions], t[kPositions];
  for (int pos = 0; pos < kPositions; ++pos) d[pos] = offsets[pos] == kNoPixel ? L{} : load<L>(x + offsets[pos] + c0);
  for (int j = 0; j < kIn; ++j) input_1d(d + j, kIn, t + j, kIn);             // B^T d, column by column
  for (int i = 0; i < kIn; ++i) input_1d(t + i * kIn, 1, d + i * kIn, 1);     // (B^T d) B, row by row
  for (int pos = 0; pos < kPositions; ++pos) store(v + pos * position_stride + c0, d[pos]);
}

// y's 4x4 tile at (n, p0, q0), channels k0 ...: A^T M A + b, where it falls
// inside the output; with `add`, added to what y holds (b is null then).
template <typename L>
void transform_output(const WinogradShape& s, const float* m, int64_t position_stride, const float* b, bool add,
                      int64_t k0, float* y_tile, int64_t rows, int64_t cols) {
  L tile[kPositions], t[kOut * kIn], out[kOut * kOut];
  for (int pos = 0; pos < kPositions; ++pos) tile[pos] = load<L>(m + pos * position_stride + k0);
  for (int j = 0; j < kIn; ++j) output_1d(tile + j, kIn, t + j, kIn);         // A^T M: 4 x 6
  for (int i = 0; i < kOut; ++i) output_1d(t + i * kIn, 1, out + i * kOut, 1);  // (A^T M) A: 4 x 4
  const L bias = b == nullptr ? L{} : load<L>(b + k0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      float* to = y_tile + (i * s.q + j) * s.k + k0;
      store(to, add ? load<L>(to) + out[i * kOut + j] : out[i * kOut + j] + bias);
    }
  }
}

}  // namespace

int64_t winograd_tiles(const WinogradShape& s) {
  const TileGrid g = grid_of(s);
  return s.n * g.rows * g.cols;
}

int64_t winograd_chunk_tiles(const WinogradShape& s) {
  const int64_t tiles = winograd_tiles(s);
  const int64_t tile_bytes = kPositions * (s.c + s.k) * static_cast<int64_t>(sizeof(float));
  const int64_t most = std::clamp<int64_t>(kChunkBytes / tile_bytes, 1, tiles);
  const int64_t chunks = (tiles + most - 1) / most;
  return (tiles + chunks - 1) / chunks;
}

WinogradShape winograd_backward_data_shape(const WinogradShape& s) {
  return {.n = s.n, .h = s.p, .w = s.q, .c = s.k, .k = s.c, .p = s.h, .q = s.w, .pad_h = 2 - s.pad_h,
          .pad_w = 2 - s.pad_w};
}

namespace {

size_t pass_workspace_floats(const WinogradShape& s) {
  return static_cast<size_t>(kPositions * (s.c * s.k + winograd_chunk_tiles(s) * (s.c + s.k)));
}

// y = (or, with `add`, +=) conv(x, w) + b, w turned for the backward-data pass.
void winograd_nhwc(const WinogradShape& s, const float* x, const float* w, bool turned, const float* b, float* y,
                   bool add, float* workspace) {
  const TileGrid g = grid_of(s);
  const int64_t tiles = winograd_tiles(s), chunk = winograd_chunk_tiles(s);
  float* u = workspace;
  float* v = u + kPositions * s.c * s.k;
  float* m = v + kPositions * chunk * s.c;
  transform_filters(s, w, turned, u);
  const int64_t c_vectors = s.c / kFloatLanes * kFloatLanes, k_vectors = s.k / kFloatLanes * kFloatLanes;
  for (int64_t first = 0; first < tiles; first += chunk) {
    const int64_t count = std::min(chunk, tiles - first);
    const int64_t v_stride = count * s.c, m_stride = count * s.k;  // between positions
    parallel_for(count, std::max<int64_t>(1, kElementwiseGrain / (kPositions * s.c)), [&](int64_t begin, int64_t end) {
      int64_t offsets[kPositions];
      for (int64_t t = begin; t < end; ++t) {
        tile_offsets(s, g, first + t, offsets);
        float* v_tile = v + t * s.c;
        int64_t c = 0;
        for (; c < c_vectors; c += kFloatLanes) transform_input<FloatLanes>(x, offsets, c, v_tile, v_stride);
        for (; c < s.c; ++c) transform_input<float>(x, offsets, c, v_tile, v_stride);
      }
    });
    for (int pos = 0; pos < kPositions; ++pos) {
      product_into(MatrixMap(m + pos * m_stride, count, s.k), ConstMatrixMap(v + pos * v_stride, count, s.c),
                   ConstMatrixMap(u + pos * s.c * s.k, s.c, s.k));
    }
    parallel_for(count, std::max<int64_t>(1, kElementwiseGrain / (kPositions * s.k)), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t tile = first + t, per_image = g.rows * g.cols, n = tile / per_image;
        const int64_t p0 = tile / g.cols % g.rows * kOut, q0 = tile % g.cols * kOut;
        const int64_t rows = std::min<int64_t>(kOut, s.p - p0), cols = std::min<int64_t>(kOut, s.q - q0);
        float* y_tile = y + ((n * s.p + p0) * s.q + q0) * s.k;
        const float* m_tile = m + t * s.k;
        int64_t k = 0;
        for (; k < k_vectors; k += kFloatLanes) {
          transform_output<FloatLanes>(s, m_tile, m_stride, b, add, k, y_tile, rows, cols);
        }
        for (; k < s.k; ++k) transform_output<float>(s, m_tile, m_stride, b, add, k, y_tile, rows, cols);
      }
    });
  }
}

}  // namespace

size_t winograd_workspace_floats(const WinogradShape& s) {
  return std::max(pass_workspace_floats(s), pass_workspace_floats(winograd_backward_data_shape(s)));
}

void winograd_forward_nhwc(const WinogradShape& s, const float* x, const float* w, const float* b, float* y,
                           float* workspace) {
  winograd_nhwc(s, x, w, /*turned=*/false, b, y, /*add=*/false, workspace);
}

void winograd_backward_data_nhwc(const WinogradShape& s, const float* w, const float* dy, float* dx, bool add,
                                 float* workspace) {
  winograd_nhwc(winograd_backward_data_shape(s), dy, w, /*turned=*/true, nullptr, dx, add, workspace);
}

}  // namespace glassbox
