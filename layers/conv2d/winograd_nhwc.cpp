// layers/conv2d/winograd_nhwc.cpp: a 3x3, stride-1 convolution's three passes
// on NHWC values by Winograd's F(4x4, 3x3) (layers/conv2d/winograd_nhwc.h).
//
// Note [Winograd F(4x4, 3x3) on NHWC values]: Winograd's algorithm makes each
// 4x4 tile of the output from the 6x6 tile of the input under it as
//   Y = A^T [ (G g G^T) . (B^T d B) ] A
// (g a 3x3 filter, d the input tile, . the element-wise product), so that
// summed over the input channels, each of the 36 positions of the 6x6 tile is
// one product: M_pos (tiles x K) = V_pos (tiles x C) * U_pos (C x K), a
// quarter of the direct convolution's multiplications. oneDNN 2.6 has such
// kernels for AVX-512 only (Note [Winograd on the CPU],
// conv2d_choices_onednn.cpp), and not for every padding, so the layers where
// Winograd pays and oneDNN has none (all of them on an AVX2 CPU; padded by 2
// on AVX-512) run all three passes here. The backward-data is the forward of dy
// through the weights with K and C swapped and each 3x3 turned half a turn,
// padded by 2 - pad. The weight gradient is F(3x3, 4x4) on the same tiles,
// dW = G^T [sum over tiles of (A dy A^T) . (B^T x B)] G: one product per
// position, V_pos^T E_pos summed over the tiles. On a Zen 3, ResNet-34's
// convolutions at batch 8 take about 0.7 of the time of oneDNN's jit:avx2
// (forward, backward-data) and of Glassbox's NHWC GEMM (backward-filter) in
// each pass (`python3 bench/ab_layers.py ResNet34 8 --a=--no-winograd`).
//
// Stored NHWC, a pixel's channels are contiguous, so the transforms work on
// one vector of channels at a time, and V and M are laid out (position, tile,
// channel): each position's product is one sgemm on row-major matrices. The
// tiles go by chunks small enough that a chunk's V and M stay in cache
// between the input transform, the 36 products and the output transform.
// The matrices are Lavin and Gray's (points 0, +-1, +-2 and infinity). Their
// transforms enlarge the values that the products sum, so the rounding grows
// with the channel count faster than a direct sum's: within 1e-5 of
// 1 + max |y| at the 128 channels tested (tests/test_conv2d_winograd_nhwc.cpp),
// more at VGG's 512.
#include "layers/conv2d/winograd_nhwc.h"

#include <algorithm>
#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"

namespace glassbox {
namespace {

// A chunk's V and M (or E): at 2 and 4 MiB ResNet-34's layers ran slower on a
// Zen 3 (shorter products), at 16 no faster.
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

// Calls each(L, c) for every vector of `count` channels, then each(float, c)
// for the channels past the last whole vector.
template <typename Each>
void over_channels(int64_t count, const Each& each) {
  int64_t c = 0;
  for (; c + kFloatLanes <= count; c += kFloatLanes) each(FloatLanes{}, c);
  for (; c < count; ++c) each(0.0f, c);
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

// e = A d, on 4 values d[0], d[stride], ... of dy, into 6: the weight
// gradient's transform of a 4x4 tile of dy.
template <typename L>
void gradient_1d(const L* d, int stride, L* e, int e_stride) {
  const L d0 = d[0], d1 = d[stride], d2 = d[2 * stride], d3 = d[3 * stride];
  const L even = d0 + d2, odd = d1 + d3, even4 = d0 + 4.0f * d2, odd4 = 2.0f * d1 + 8.0f * d3;
  e[0] = d0;
  e[e_stride] = even + odd;
  e[2 * e_stride] = even - odd;
  e[3 * e_stride] = even4 + odd4;
  e[4 * e_stride] = even4 - odd4;
  e[5 * e_stride] = d3;
}

// o = G^T m, on 6 values m[0], m[stride], ..., into 3: the weight gradient's
// transform back from the 6x6 tile.
template <typename L>
void filter_gradient_1d(const L* m, int stride, L* o, int o_stride) {
  const L sum12 = m[stride] + m[2 * stride], diff12 = m[stride] - m[2 * stride];
  const L sum34 = m[3 * stride] + m[4 * stride], diff34 = m[3 * stride] - m[4 * stride];
  o[0] = m[0] / 4.0f - sum12 / 6.0f + sum34 / 24.0f;
  o[o_stride] = diff34 / 12.0f - diff12 / 6.0f;
  o[2 * o_stride] = (sum34 - sum12) / 6.0f + m[5 * stride];
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
  parallel_for(s.c, std::max<int64_t>(1, kElementwiseGrain / (kPositions * s.k)), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      over_channels(s.k, [&](auto lanes, int64_t k) { transform_filter<decltype(lanes)>(s, w, turned, c, k, u); });
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

// E[pos][t][k0 ...] = (A dy A^T)[pos] for the 4x4 tile of dy at (n, p0, q0),
// zeros past the output's edge.
template <typename L>
void transform_gradient(const WinogradShape& s, const float* dy_tile, int64_t rows, int64_t cols, int64_t k0, float* e,
                        int64_t position_stride) {
  L d[kOut * kOut], t[kIn * kOut], tile[kPositions];
  for (int64_t i = 0; i < kOut; ++i) {
    for (int64_t j = 0; j < kOut; ++j) {
      d[i * kOut + j] = i < rows && j < cols ? load<L>(dy_tile + (i * s.q + j) * s.k + k0) : L{};
    }
  }
  for (int j = 0; j < kOut; ++j) gradient_1d(d + j, kOut, t + j, kOut);          // A dy: 6 x 4
  for (int i = 0; i < kIn; ++i) gradient_1d(t + i * kOut, 1, tile + i * kIn, 1);  // (A dy) A^T: 6 x 6
  for (int pos = 0; pos < kPositions; ++pos) store(e + pos * position_stride + k0, tile[pos]);
}

// dW[k][c] = (or +=) G^T M G for one vector (or one float) of output channels
// k0 ..., from M (position, C, K).
template <typename L>
void transform_filter_gradient(const WinogradShape& s, const float* m, int64_t c, int64_t k0, bool add, float* dw) {
  constexpr int kLanes = sizeof(L) / sizeof(float);
  L tile[kPositions], t[3 * kIn], out[9];
  for (int pos = 0; pos < kPositions; ++pos) tile[pos] = load<L>(m + pos * s.c * s.k + c * s.k + k0);
  for (int j = 0; j < kIn; ++j) filter_gradient_1d(tile + j, kIn, t + j, kIn);       // G^T M: 3 x 6
  for (int i = 0; i < 3; ++i) filter_gradient_1d(t + i * kIn, 1, out + i * 3, 1);   // (G^T M) G: 3 x 3
  for (int tap = 0; tap < 9; ++tap) {
    float lanes[kLanes];
    store(lanes, out[tap]);
    for (int lane = 0; lane < kLanes; ++lane) {
      float& to = dw[((k0 + lane) * s.c + c) * 9 + tap];
      to = add ? to + lanes[lane] : lanes[lane];
    }
  }
}

// Where a tile's 4x4 outputs lie: image n, from row p0 and column q0, `rows`
// x `cols` of them inside the output.
struct TilePlace {
  int64_t n = 0, p0 = 0, q0 = 0, rows = 0, cols = 0;
};

TilePlace place_of(const WinogradShape& s, const TileGrid& g, int64_t tile) {
  TilePlace at{.n = tile / (g.rows * g.cols), .p0 = tile / g.cols % g.rows * kOut, .q0 = tile % g.cols * kOut};
  at.rows = std::min<int64_t>(kOut, s.p - at.p0), at.cols = std::min<int64_t>(kOut, s.q - at.q0);
  return at;
}

// V[pos][t][...] for tile `tile` of the chunk's tile t: every channel of its 6x6 input.
void transform_input_tile(const WinogradShape& s, const TileGrid& g, const float* x, int64_t tile, float* v_tile,
                          int64_t v_stride) {
  int64_t offsets[kPositions];
  tile_offsets(s, g, tile, offsets);
  over_channels(s.c, [&](auto lanes, int64_t c) {
    transform_input<decltype(lanes)>(x, offsets, c, v_tile, v_stride);
  });
}

// The tiles of a chunk over the threads, `floats` of work apiece.
template <typename Body>
void over_tiles(int64_t count, int64_t floats, const Body& body) {
  parallel_for(count, std::max<int64_t>(1, kElementwiseGrain / floats), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) body(t);
  });
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
  for (int64_t first = 0; first < tiles; first += chunk) {
    const int64_t count = std::min(chunk, tiles - first);
    const int64_t v_stride = count * s.c, m_stride = count * s.k;  // between positions
    over_tiles(count, kPositions * s.c,
               [&](int64_t t) { transform_input_tile(s, g, x, first + t, v + t * s.c, v_stride); });
    for (int pos = 0; pos < kPositions; ++pos) {
      product_into(MatrixMap(m + pos * m_stride, count, s.k), ConstMatrixMap(v + pos * v_stride, count, s.c),
                   ConstMatrixMap(u + pos * s.c * s.k, s.c, s.k));
    }
    over_tiles(count, kPositions * s.k, [&](int64_t t) {
      const TilePlace at = place_of(s, g, first + t);
      float* y_tile = y + ((at.n * s.p + at.p0) * s.q + at.q0) * s.k;
      over_channels(s.k, [&](auto lanes, int64_t k) {
        transform_output<decltype(lanes)>(s, m + t * s.k, m_stride, b, add, k, y_tile, at.rows, at.cols);
      });
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

void winograd_filter_gradient_nhwc(const WinogradShape& s, const float* x, const float* dy, float* dw, bool add,
                                   float* workspace) {
  const TileGrid g = grid_of(s);
  const int64_t tiles = winograd_tiles(s), chunk = winograd_chunk_tiles(s);
  float* m = workspace;  // (position, C, K), summed over the chunks
  float* v = m + kPositions * s.c * s.k;
  float* e = v + kPositions * chunk * s.c;
  for (int64_t first = 0; first < tiles; first += chunk) {
    const int64_t count = std::min(chunk, tiles - first);
    const int64_t v_stride = count * s.c, e_stride = count * s.k;  // between positions
    over_tiles(count, kPositions * (s.c + s.k), [&](int64_t t) {
      transform_input_tile(s, g, x, first + t, v + t * s.c, v_stride);
      const TilePlace at = place_of(s, g, first + t);
      const float* dy_tile = dy + ((at.n * s.p + at.p0) * s.q + at.q0) * s.k;
      over_channels(s.k, [&](auto lanes, int64_t k) {
        transform_gradient<decltype(lanes)>(s, dy_tile, at.rows, at.cols, k, e + t * s.k, e_stride);
      });
    });
    for (int pos = 0; pos < kPositions; ++pos) {
      product_into(MatrixMap(m + pos * s.c * s.k, s.c, s.k), ConstMatrixMap(v + pos * v_stride, count, s.c).transpose(),
                   ConstMatrixMap(e + pos * e_stride, count, s.k), /*accumulate=*/first > 0);
    }
  }
  parallel_for(s.c, std::max<int64_t>(1, kElementwiseGrain / (kPositions * s.k)), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      over_channels(s.k, [&](auto lanes, int64_t k) {
        transform_filter_gradient<decltype(lanes)>(s, m, c, k, add, dw);
      });
    }
  });
}

}  // namespace glassbox
