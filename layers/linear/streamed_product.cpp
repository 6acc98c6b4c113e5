// layers/linear/streamed_product.cpp: see layers/linear/streamed_product.h.
#include "layers/linear/streamed_product.h"

#include <algorithm>

#include "tensor/eigen_maps.h"
#include "tensor/float_lanes.h"

namespace glassbox {
namespace {

// Rows whose sums fit the registers at once (kRows x 2 sums of kFloatLanes lanes);
// more go in groups of this many.
constexpr int64_t kMaxStreamedRows = 8;
// Weight rows per pass over the groups: the second group reads them from L2.
constexpr int64_t kWeightRowsPerPass = 4;

// y[r][o] (= or +=) sum_i x[r][i] w[o][i] for kWeightRows rows o from `o`:
// the lanes' sums in a fixed order, then the tail past the last full 16.
template <int kRows, int kWeightRows>
void streamed_rows(const float* x, int64_t in, const float* w, int64_t o, float* y, int64_t y_stride, bool add) {
  FloatLanes sums[kWeightRows][kRows] = {};
  const float* rows[kWeightRows];
  for (int k = 0; k < kWeightRows; ++k) rows[k] = w + (o + k) * in;
  int64_t i = 0;
  for (; i + kFloatLanes <= in; i += kFloatLanes) {
    FloatLanes weights[kWeightRows];
    for (int k = 0; k < kWeightRows; ++k) weights[k] = load_lanes(rows[k] + i);
    for (int r = 0; r < kRows; ++r) {
      const FloatLanes v = load_lanes(x + r * in + i);
      for (int k = 0; k < kWeightRows; ++k) sums[k][r] += weights[k] * v;
    }
  }
  for (int k = 0; k < kWeightRows; ++k) {
    for (int r = 0; r < kRows; ++r) {
      float sum = 0.0f;
      for (int lane = 0; lane < kFloatLanes; ++lane) sum += sums[k][r][lane];
      for (int64_t j = i; j < in; ++j) sum += rows[k][j] * x[r * in + j];
      float& out = y[r * y_stride + o + k];
      out = add ? out + sum : sum;
    }
  }
}

template <int kRows>
void streamed_block(const float* x, int64_t in, const float* w, int64_t begin, int64_t end, float* y,
                    int64_t y_stride, bool add) {
  int64_t o = begin;
  for (; o + 2 <= end; o += 2) streamed_rows<kRows, 2>(x, in, w, o, y, y_stride, add);
  if (o < end) streamed_rows<kRows, 1>(x, in, w, o, y, y_stride, add);
}

// The same for one group of n <= kMaxStreamedRows rows.
void streamed_group(int64_t n, const float* x, int64_t in, const float* w, int64_t begin, int64_t end, float* y,
                    int64_t y_stride, bool add) {
  switch (n) {
    case 1: return streamed_block<1>(x, in, w, begin, end, y, y_stride, add);
    case 2: return streamed_block<2>(x, in, w, begin, end, y, y_stride, add);
    case 3: return streamed_block<3>(x, in, w, begin, end, y, y_stride, add);
    case 4: return streamed_block<4>(x, in, w, begin, end, y, y_stride, add);
    case 5: return streamed_block<5>(x, in, w, begin, end, y, y_stride, add);
    case 6: return streamed_block<6>(x, in, w, begin, end, y, y_stride, add);
    case 7: return streamed_block<7>(x, in, w, begin, end, y, y_stride, add);
    case 8: return streamed_block<8>(x, in, w, begin, end, y, y_stride, add);
    default: break;
  }
}

}  // namespace

void streamed_forward(int64_t n, const float* x, int64_t in, const float* w, int64_t begin, int64_t end, float* y,
                      int64_t y_stride, GradMode mode) {
  const bool add = mode == GradMode::kAdd;
  for (int64_t o = begin; o < end; o += kWeightRowsPerPass) {
    const int64_t o_end = std::min(end, o + kWeightRowsPerPass);
    for (int64_t r = 0; r < n; r += kMaxStreamedRows) {
      streamed_group(std::min(kMaxStreamedRows, n - r), x + r * in, in, w, o, o_end, y + r * y_stride, y_stride,
                     add);
    }
  }
}

// Each weight row's segment of the column block is read once and added,
// times dy[r][o], into every row's segment of dx (zeroed first unless mode is
// kAdd), four weight rows at a time so that each load and store of a sum
// carries four products. The segments stay in cache between weight rows
// (Note [Streamed backward-data by wide blocks] in layers/linear/linear.cpp).
void streamed_backward_data(int64_t n, const float* dy, int64_t out, const float* w, int64_t in, int64_t begin,
                            int64_t end, GradMode mode, float* dx) {
  using Segment = Eigen::Map<Eigen::ArrayXf>;
  using ConstSegment = Eigen::Map<const Eigen::ArrayXf>;
  const int64_t width = end - begin;
  auto sums = [&](int64_t r) { return Segment(dx + r * in + begin, width); };
  if (mode == GradMode::kWrite) {
    for (int64_t r = 0; r < n; ++r) sums(r).setZero();
  }
  int64_t o = 0;
  for (; o + 4 <= out; o += 4) {
    const ConstSegment w0(w + o * in + begin, width), w1(w + (o + 1) * in + begin, width);
    const ConstSegment w2(w + (o + 2) * in + begin, width), w3(w + (o + 3) * in + begin, width);
    for (int64_t r = 0; r < n; ++r) {
      const float* d = dy + r * out + o;
      sums(r) += d[0] * w0 + d[1] * w1 + d[2] * w2 + d[3] * w3;
    }
  }
  for (; o < out; ++o) {
    const ConstSegment row(w + o * in + begin, width);
    for (int64_t r = 0; r < n; ++r) sums(r) += dy[r * out + o] * row;
  }
}

}  // namespace glassbox
