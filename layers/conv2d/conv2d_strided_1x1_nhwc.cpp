// layers/conv2d/conv2d_strided_1x1_nhwc.cpp: strided 1x1 convolutions on NHWC values, each
// pass one product over every pixel of the batch.
//
// Note [1x1 convolutions on NHWC values]: stored NHWC, a 1x1 convolution's
// input is an (N*H*W) x C row-major matrix and its output an (N*P*Q) x K
// one, so with xs the input's rows at the output's pixels (gathered into the
// workspace) every pass is a single product:
//   forward           y  = xs W^T  (+ b on every row)
//   backward-data     dxs = dy W   (scattered back into dx, zeros between)
//   backward-weights  dW = dy^T xs
// In NCHW the same layer is a product per image (conv2d_im2col.cpp). Each
// product_into call runs outside any OpenMP team, so the build's sgemm threads
// it (tensor/gemm_onednn.cpp). The backward gathers xs again: the forward's
// copy lived in the workspace, which the layers after it reuse. Tested
// against the NCHW reference pass by pass (tests/test_conv2d_strided_1x1_nhwc.cpp).
//
// Only strided layers offer NHWC to the graph (Conv2d::can_read_channels_last).
// ResNet-18 and -34 meet a 1x1 layer only in their downsampling shortcuts
// (stride 2): with this path their trunks are NHWC from end to end. Offered
// by every 1x1 layer, ResNet-50's bottlenecks go NHWC too, and the stride-1
// 1x1 convolutions then gain (one product over the batch's rows, where NCHW
// runs one per image with 49 to 196 columns in the last stages), but batch
// norm loses more: its NCHW path sums a channel and updates it while that
// channel's planes sit in L2; on NHWC every channel's sums need the whole
// tensor first, so a training forward and a backward read their tensors
// twice from further out. So stride-1 layers stay NCHW
// (`bench/ab_layers.py`, `bench/ab_builds.py`).
#include <algorithm>
#include <cstring>

#include "layers/conv2d/conv2d.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/product.h"

namespace glassbox {
namespace {
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
}  // namespace

bool Conv2d::strided_1x1_nhwc_shape() const {
  const Options& o = options_;
  return o.kernel == Size2(1) && o.stride != Size2(1) && o.pad == Size2(0) && o.groups == 1;
}

void Conv2d::plan_strided_1x1_nhwc() {
  CpuPlan& pl = plan_;
  pl.path = pl.backward_path = CpuPath::kGlassbox;
  pl.strided_1x1_nhwc = true;
  // The gathered rows, or the bias gradient's per-thread sums: never both at
  // once (the sums come after the last product).
  const int64_t gathered = pl.n * pl.p * pl.q * pl.c;
  const int64_t sums = options_.bias ? int64_t{pl.threads} * pl.k : 0;
  set_workspace_bytes(static_cast<size_t>(std::max(gathered, sums)) * sizeof(float));
  backend_ = std::make_unique<NamedCpuPath>("Glassbox 1x1 GEMM over the batch's strided pixels; x and y NHWC");
}

// xs: x's rows at the output's pixels, (N*P*Q) x C.
const float* Conv2d::strided_rows(const float* x, float* workspace) const {
  const CpuPlan& pl = plan_;
  const int64_t sh = options_.stride.h, sw = options_.stride.w, rows = pl.n * pl.p * pl.q;
  const size_t row_bytes = static_cast<size_t>(pl.c) * sizeof(float);
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / pl.c), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / (pl.p * pl.q), p = row / pl.q % pl.p, q = row % pl.q;
      std::memcpy(workspace + row * pl.c, x + ((n * pl.h + p * sh) * pl.w + q * sw) * pl.c, row_bytes);
    }
  });
  return workspace;
}

void Conv2d::forward_strided_1x1_nhwc(const ForwardArgs& args, float* workspace) const {
  const CpuPlan& pl = plan_;
  const int64_t rows = pl.n * pl.p * pl.q;
  const float* xs = strided_rows(args.inputs[0].data<float>(), workspace);
  float* y = args.output.data<float>();
  product_into(MatrixMap(y, rows, pl.k), ConstMatrixMap(xs, rows, pl.c),
               ConstMatrixMap(args.params[0].data<float>(), pl.k, pl.c).transpose());
  if (!options_.bias) return;
  const Eigen::Map<const Eigen::RowVectorXf> b(args.params[1].data<float>(), pl.k);
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / pl.k), [&](int64_t begin, int64_t end) {
    MatrixMap(y + begin * pl.k, end - begin, pl.k).rowwise() += b;
  });
}

void Conv2d::backward_data_strided_1x1_nhwc(const BackwardArgs& args, float* workspace) const {
  const CpuPlan& pl = plan_;
  const GradMode mode = args.input_grad_modes[0];
  const int64_t rows = pl.n * pl.p * pl.q;
  float* dx = args.input_grads[0].data<float>();
  const ConstMatrixMap dy(args.output_grad.data<float>(), rows, pl.k);
  const ConstMatrixMap w(args.params[0].data<float>(), pl.k, pl.c);
  product_into(MatrixMap(workspace, rows, pl.c), dy, w);
  // Every row of dx: the product's row where a pixel was read, zero (or
  // nothing added) where the stride skipped it.
  const int64_t sh = options_.stride.h, sw = options_.stride.w, pixels = pl.n * pl.h * pl.w;
  parallel_for(pixels, std::max<int64_t>(1, kElementwiseGrain / pl.c), [&](int64_t begin, int64_t end) {
    for (int64_t pixel = begin; pixel < end; ++pixel) {
      const int64_t n = pixel / (pl.h * pl.w), h = pixel / pl.w % pl.h, v = pixel % pl.w;
      auto dx_row = as_array(dx + pixel * pl.c, pl.c);
      if (h % sh == 0 && v % sw == 0) {
        const int64_t row = (n * pl.p + h / sh) * pl.q + v / sw;
        write_or_add(mode, dx_row, Eigen::Map<const Eigen::ArrayXf>(workspace + row * pl.c, pl.c));
      } else if (mode == GradMode::kWrite) {
        dx_row.setZero();
      }
    }
  });
}

void Conv2d::backward_filter_strided_1x1_nhwc(const BackwardArgs& args, float* workspace) const {
  const CpuPlan& pl = plan_;
  const int64_t rows = pl.n * pl.p * pl.q;
  const float* xs = strided_rows(args.inputs[0].data<float>(), workspace);
  product_into(MatrixMap(args.param_grads[0].data<float>(), pl.k, pl.c),
               ConstMatrixMap(args.output_grad.data<float>(), rows, pl.k).transpose(), ConstMatrixMap(xs, rows, pl.c),
               args.param_grad_mode == GradMode::kAdd);
}

}  // namespace glassbox
