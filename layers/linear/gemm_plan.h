// layers/linear/gemm_plan.h: Linear's three products as column-major GEMMs,
// and the epilogue each one takes on cuBLASLt (layers/linear/linear_cuda.cpp).
// Pure functions, built and tested without a GPU (tests/test_linear_gemm_plan.cpp).
//
// cuBLAS is column-major. A row-major (R, C) matrix is the column-major C x R
// matrix with leading dimension C, i.e. its transpose. So with row-major
// x:(N,I), w:(O,I), y:(N,O) the products become, column-major:
//   y^T  (O x N) = w (stored I x O)^T * x^T (I x N)     transposes (T, N), m O, n N, k I
//   dx^T (I x N) = w (I x O)          * dy^T (O x N)    transposes (N, N), m I, n N, k O
//   dw^T (I x O) = x^T (I x N)        * dy (stored O x N)^T   (N, T), m I, n O, k N
// Over leading dimensions (Linear::Options::over_last_dim) x is (..., I): N is
// then the product of the leading sizes, the same packed memory.
//
// Epilogues: the forward adds the bias (a vector of D's m = O rows) and, where
// the layer applies the ReLU after it (Note [A ReLU fused into its producer],
// graph/fusion.h), max(0, .); the weights' product also sums dy over the
// rows into the bias gradient (a vector of D's n = O columns, reduced over k
// = N rows of the second operand: cuBLASLt's "bias gradient of B").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace glassbox {

enum class LinearGemmPass { kForward, kBackwardData, kBackwardWeights };

// What cuBLASLt applies to a product's result as it writes it.
enum class LinearEpilogue {
  kNone,
  kBias,              // D += bias, broadcast over D's columns
  kRelu,              // D = max(0, D)
  kBiasRelu,          // D = max(0, D + bias)
  kBiasGradientOfB,   // also db[j] = sum over k of op(B)[k, j]
};

// One product D (m x n) = op(A) op(B) (+ beta C, C = D), every matrix packed
// column-major: A is stored a_rows x a_columns with leading dimension a_rows,
// and likewise B and D (D: m x n, leading dimension m).
struct LinearGemm {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t a_rows = 0, a_columns = 0, b_rows = 0, b_columns = 0;
  bool operator==(const LinearGemm&) const = default;
};

// The product for `pass` of a Linear on `rows` rows of `in` features to `out`.
LinearGemm linear_gemm(LinearGemmPass pass, int64_t rows, int64_t in, int64_t out);

// The epilogue for `pass`: the forward's from the bias and the fused ReLU,
// the weights' product's from the bias; the data's product has none.
LinearEpilogue linear_epilogue(LinearGemmPass pass, bool bias, bool relu);

// Note [The bias gradient in fp32]: whether the weights' product also sums
// db in its epilogue, for `data` values with TF32 on or off. Only for float32
// data without TF32. cuBLASLt writes the epilogue's db in D's type
// (cublasLt.h: "the same type as the output elements"), so with 16-bit data
// it would round db to 16 bits before it reaches the fp32 gradient; and under
// a TF32 compute type it does not say whether its sum reads dy rounded to
// TF32. Elsewhere db is summed in fp32 straight into its gradient (Note [A
// bias gradient on cuBLAS], layers/bias_gradient_plan.h), as PyTorch's sum is.
bool bias_gradient_in_epilogue(DType data, bool tf32);

// Note [When cuBLASLt refuses a product]: cuBLASLt's heuristics may offer no
// algorithm for an epilogue at some shapes, or for any product of a shape
// (Note [cuBLASLt's heuristic refusals], layers/linear/lt_matmul_cuda.cpp):
// a Linear at batch 1 has a one-column x^T. A product then asks cuBLASLt for
// less, in the order lt_epilogue_fallbacks() gives, and what the epilogue it
// got leaves undone runs as a pass of its own: the bias, with the ReLU where
// both are left, by Glassbox's kernel (Note [A bias add by Glassbox's
// kernel], layers/bias_add_plan.h), the ReLU alone by cudnnActivationForward,
// the bias gradient by cuBLAS (Note [A bias gradient on cuBLAS],
// layers/bias_gradient_plan.h). Where cuBLASLt
// offers nothing, cublasGemmEx, which takes every shape within int, runs the
// product with the same compute type. algorithms() names the route, so a
// slower path is seen, not hidden.
std::vector<LinearEpilogue> lt_epilogue_fallbacks(LinearEpilogue wanted);

// Note [A ReLU epilogue that drops NaN]: Glassbox's ReLU passes a NaN on
// (Note [A ReLU keeps a NaN], layers/relu.h), so that a non-finite value is
// found where it starts. cublasLt.h does not say what its ReLU epilogues do
// with a NaN, and a max written as fmaxf(x, 0) returns 0. So a product
// planned with a ReLU epilogue runs once at prepare on zeroed operands of its
// own shapes with one NaN, A's first value (D's first value sums it whatever
// the transposes: op(A)(0,0) op(B)(0,0) = NaN x 0); where D's first value
// comes back a number, or the run cannot be had (no device memory for its
// buffers), the product takes the next epilogue of lt_epilogue_fallbacks()
// without the ReLU, the ReLU runs as a pass of its own, and algorithms()
// says why.
bool applies_relu(LinearEpilogue epilogue);
// The probe's NaN as `data`'s bytes (4 for float32, 2 for the 16-bit types),
// and whether one value's bytes read back are a NaN.
std::vector<uint8_t> nan_bytes(DType data);
bool is_nan_bytes(DType data, std::span<const uint8_t> bytes);

// Which library a product may run on: kAuto is cuBLASLt where it offers an
// algorithm, else cublasGemmEx; kGemmEx is cublasGemmEx whatever cuBLASLt
// offers (Linear::pin_cuda_library: the GPU tests run the fallback with it).
enum class LinearLibrary { kAuto, kGemmEx };

// What a product's epilogue leaves to passes of their own.
struct EpiloguePasses {
  bool bias = false, relu = false, bias_gradient = false;
  bool any() const { return bias || relu || bias_gradient; }
  bool operator==(const EpiloguePasses&) const = default;
};
// The part of `wanted` that the epilogue `got` does not do (kNone on
// cublasGemmEx).
EpiloguePasses passes_left(LinearEpilogue wanted, LinearEpilogue got);
// "bias and ReLU as one pass of their own"; empty where none is.
std::string describe(const EpiloguePasses& passes);

// Whether cublasGemmEx takes the product: its sizes and leading dimensions
// are ints.
bool fits_gemm_ex(const LinearGemm& gemm);

std::string_view name_of(LinearGemmPass pass);
std::string_view name_of(LinearEpilogue epilogue);  // "bias + ReLU"

}  // namespace glassbox
