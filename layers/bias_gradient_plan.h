// layers/bias_gradient_plan.h: a bias gradient, db[k] += the sum of dy over
// every axis but its channels, as one or two cuBLAS matrix-vector products
// against vectors of ones (layers/bias_gradient_cuda.h). Pure functions,
// built and tested without a GPU (tests/test_bias_gradient_plan.cpp).
//
// Note [A bias gradient on cuBLAS]: cuDNN's reduction for this,
// cudnnConvolutionBackwardBias, is deprecated in cuDNN 9 and documents no
// bfloat16, and it writes db in dy's type, so a 16-bit layer would round it
// before adding it into the fp32 gradient. cublasGemmEx documents 16-bit A
// and B with an fp32 C and fp32 accumulation, so here the sums are fp32 from
// the first product on and land, added, in the fp32 gradient, for every
// precision. PyTorch also sums dy itself (grad_output.sum) rather than ask
// cuDNN.
//
// dy is (images, channels, pixels) channels-first (NCHW: pixels H*W; a
// Linear's (N, O) is (N, O, 1)) or (images, pixels, channels) channels-last
// (NHWC). cuBLAS is column-major:
//   channels-first: first  partial (N*K) = A^T ones(P), A = dy as P x N*K
//                   second db (K) += partial as K x N times ones(N)
//   channels-last:  first  partial (K*P) = A ones(N), A = dy as K*P x N
//                   second db (K) += partial as K x P times ones(P)
// Where the second product would sum one column (N = 1 channels-first, P = 1
// channels-last), the first adds into db itself and there is no second.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace glassbox {

struct BiasGradientPlan {
  // The first product: dy read as the column-major a_rows x a_columns matrix
  // A (leading dimension a_rows), times a vector of ones of dy's type:
  // A^T ones(a_rows) where transpose_a, else A ones(a_columns).
  int64_t a_rows = 0, a_columns = 0;
  bool transpose_a = false;
  // The second: db += the partial sums as the column-major channels x
  // second_ones matrix, times float32 ones(second_ones). 1: none, the first
  // writes into db (adding).
  int64_t channels = 0, second_ones = 1;

  // The length of the first product's vector of ones.
  int64_t first_ones() const { return transpose_a ? a_rows : a_columns; }
  // The float32 partial sums between the products: channels * second_ones
  // values, none where there is no second product.
  int64_t partial_size() const { return second_ones > 1 ? channels * second_ones : 0; }
  bool operator==(const BiasGradientPlan&) const = default;
};

// The plan for dy of `images` x `channels` x `pixels` elements stored in
// `layout` (kNCHW: channels-first, kNHWC: channels-last). Every size at least
// 1; ShapeError otherwise, or where a matrix dimension exceeds cuBLAS's int.
BiasGradientPlan plan_bias_gradient(int64_t images, int64_t channels, int64_t pixels, Layout layout);

}  // namespace glassbox
