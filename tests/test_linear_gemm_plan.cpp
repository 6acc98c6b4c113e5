// tests/test_linear_gemm_plan.cpp: Linear's products as column-major GEMMs
// (layers/linear/gemm_plan.h), the plan cuBLASLt runs on a GPU, checked here
// without one: each product, run by a plain column-major GEMM on Linear's
// row-major tensors as they lie in memory, with the epilogue applied as
// cuBLASLt documents it, gives the layer's maths.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "layers/linear/gemm_plan.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

using Floats = std::vector<float>;

// Element (i, j) of a packed column-major matrix with `rows` rows, read
// through op() as the GEMM reads it.
float at(const Floats& matrix, int64_t rows, bool transposed, int64_t i, int64_t j) {
  return transposed ? matrix[static_cast<size_t>(i * rows + j)] : matrix[static_cast<size_t>(j * rows + i)];
}

// D = op(A) op(B), then the epilogue; `bias` is read (bias epilogues) or
// written (the bias gradient of B: column j sums op(B)'s column j over k).
Floats run(const LinearGemm& g, LinearEpilogue epilogue, const Floats& a, const Floats& b, Floats& bias) {
  EXPECT_EQ(static_cast<int64_t>(a.size()), g.a_rows * g.a_columns);
  EXPECT_EQ(static_cast<int64_t>(b.size()), g.b_rows * g.b_columns);
  EXPECT_EQ(g.transpose_a ? g.a_columns : g.a_rows, g.m);
  EXPECT_EQ(g.transpose_a ? g.a_rows : g.a_columns, g.k);
  EXPECT_EQ(g.transpose_b ? g.b_columns : g.b_rows, g.k);
  EXPECT_EQ(g.transpose_b ? g.b_rows : g.b_columns, g.n);
  Floats d(static_cast<size_t>(g.m * g.n));
  for (int64_t j = 0; j < g.n; ++j) {
    for (int64_t i = 0; i < g.m; ++i) {
      float sum = 0.0f;
      for (int64_t p = 0; p < g.k; ++p) {
        sum += at(a, g.a_rows, g.transpose_a, i, p) * at(b, g.b_rows, g.transpose_b, p, j);
      }
      if (epilogue == LinearEpilogue::kBias || epilogue == LinearEpilogue::kBiasRelu) sum += bias[static_cast<size_t>(i)];
      if (epilogue == LinearEpilogue::kRelu || epilogue == LinearEpilogue::kBiasRelu) sum = std::max(sum, 0.0f);
      d[static_cast<size_t>(j * g.m + i)] = sum;
    }
  }
  if (epilogue == LinearEpilogue::kBiasGradientOfB) {
    bias.assign(static_cast<size_t>(g.n), 0.0f);
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t p = 0; p < g.k; ++p) bias[static_cast<size_t>(j)] += at(b, g.b_rows, g.transpose_b, p, j);
    }
  }
  return d;
}

// Small integers: every sum is exact in float, so the checks compare exactly.
Floats values(int64_t count, int seed) {
  Floats v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 7 + seed * 3) % 9 - 4);
  return v;
}

constexpr int64_t kRows = 5, kIn = 3, kOut = 4;
// Row-major, as Linear holds them: x (N, I), w (O, I), b (O), dy (N, O).
const Floats x = values(kRows * kIn, 1), w = values(kOut * kIn, 2), b = values(kOut, 3), dy = values(kRows * kOut, 4);

TEST(LinearGemmPlan, TheForwardProductIsXTimesWTransposedPlusTheBiasAndTheRelu) {
  const LinearGemm g = linear_gemm(LinearGemmPass::kForward, kRows, kIn, kOut);
  for (bool relu : {false, true}) {
    Floats bias = b;
    const Floats y = run(g, linear_epilogue(LinearGemmPass::kForward, true, relu), w, x, bias);
    for (int64_t n = 0; n < kRows; ++n) {
      for (int64_t o = 0; o < kOut; ++o) {
        float expected = b[static_cast<size_t>(o)];
        for (int64_t i = 0; i < kIn; ++i) expected += x[static_cast<size_t>(n * kIn + i)] * w[static_cast<size_t>(o * kIn + i)];
        if (relu) expected = std::max(expected, 0.0f);
        EXPECT_EQ(y[static_cast<size_t>(n * kOut + o)], expected) << "row " << n << ", feature " << o;
      }
    }
  }
}

TEST(LinearGemmPlan, TheDataProductIsDyTimesW) {
  const LinearGemm g = linear_gemm(LinearGemmPass::kBackwardData, kRows, kIn, kOut);
  Floats unused;
  const Floats dx = run(g, linear_epilogue(LinearGemmPass::kBackwardData, true, true), w, dy, unused);
  for (int64_t n = 0; n < kRows; ++n) {
    for (int64_t i = 0; i < kIn; ++i) {
      float expected = 0.0f;
      for (int64_t o = 0; o < kOut; ++o) expected += dy[static_cast<size_t>(n * kOut + o)] * w[static_cast<size_t>(o * kIn + i)];
      EXPECT_EQ(dx[static_cast<size_t>(n * kIn + i)], expected) << "row " << n << ", input " << i;
    }
  }
}

TEST(LinearGemmPlan, TheWeightsProductIsDyTransposedTimesXAndItsEpilogueSumsDyIntoTheBiasGradient) {
  const LinearGemm g = linear_gemm(LinearGemmPass::kBackwardWeights, kRows, kIn, kOut);
  Floats db;
  const Floats dw = run(g, linear_epilogue(LinearGemmPass::kBackwardWeights, true, false), x, dy, db);
  for (int64_t o = 0; o < kOut; ++o) {
    float expected_db = 0.0f;
    for (int64_t n = 0; n < kRows; ++n) expected_db += dy[static_cast<size_t>(n * kOut + o)];
    EXPECT_EQ(db[static_cast<size_t>(o)], expected_db) << "feature " << o;
    for (int64_t i = 0; i < kIn; ++i) {
      float expected = 0.0f;
      for (int64_t n = 0; n < kRows; ++n) expected += dy[static_cast<size_t>(n * kOut + o)] * x[static_cast<size_t>(n * kIn + i)];
      EXPECT_EQ(dw[static_cast<size_t>(o * kIn + i)], expected) << "feature " << o << ", input " << i;
    }
  }
}

TEST(LinearGemmPlan, EachPassTakesTheEpilogueItsLayerNeeds) {
  using E = LinearEpilogue;
  using P = LinearGemmPass;
  EXPECT_EQ(linear_epilogue(P::kForward, false, false), E::kNone);
  EXPECT_EQ(linear_epilogue(P::kForward, true, false), E::kBias);
  EXPECT_EQ(linear_epilogue(P::kForward, false, true), E::kRelu);
  EXPECT_EQ(linear_epilogue(P::kForward, true, true), E::kBiasRelu);
  // The ReLU's backward is the ReLU's own: no pass masks dy.
  EXPECT_EQ(linear_epilogue(P::kBackwardData, true, true), E::kNone);
  EXPECT_EQ(linear_epilogue(P::kBackwardWeights, true, true), E::kBiasGradientOfB);
  EXPECT_EQ(linear_epilogue(P::kBackwardWeights, false, true), E::kNone);
  EXPECT_EQ(name_of(E::kBiasRelu), "bias + ReLU");
  EXPECT_EQ(name_of(P::kBackwardWeights), "backward-weights");
}

// Note [The bias gradient in fp32]: the epilogue sums db only where its sum
// is an fp32 sum of fp32 values, into an fp32 vector.
TEST(LinearGemmPlan, TheEpilogueSumsTheBiasGradientOnlyInFp32) {
  EXPECT_TRUE(bias_gradient_in_epilogue(DType::kFloat32, false));
  EXPECT_FALSE(bias_gradient_in_epilogue(DType::kFloat32, true)) << "TF32";
  EXPECT_FALSE(bias_gradient_in_epilogue(DType::kBFloat16, false)) << "db would be rounded to bf16";
  EXPECT_FALSE(bias_gradient_in_epilogue(DType::kFloat16, false)) << "db would be rounded to fp16";
}

// Note [A ReLU epilogue that drops NaN]: the probe plants its NaN in A's
// first stored value and reads D's first; every pass's product, at shapes
// with one row or column and without, carries it there through the sum.
TEST(LinearGemmPlan, TheReluProbesNanReachesDsFirstValueInEveryPass) {
  for (const LinearGemmPass pass : {LinearGemmPass::kForward, LinearGemmPass::kBackwardData,
                                    LinearGemmPass::kBackwardWeights}) {
    for (const auto& [rows, in, out] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 4}, {1, 2, 3}, {4, 1, 1}}) {
      const LinearGemm g = linear_gemm(pass, rows, in, out);
      Floats a(static_cast<size_t>(g.a_rows * g.a_columns), 0.0f), b(static_cast<size_t>(g.b_rows * g.b_columns));
      a[0] = std::numeric_limits<float>::quiet_NaN();
      Floats bias(static_cast<size_t>(g.m), 0.0f);
      const Floats d = run(g, LinearEpilogue::kBias, a, b, bias);
      EXPECT_TRUE(std::isnan(d[0])) << name_of(pass) << " at " << rows << " x " << in << " -> " << out;
    }
  }
  EXPECT_TRUE(applies_relu(LinearEpilogue::kRelu));
  EXPECT_TRUE(applies_relu(LinearEpilogue::kBiasRelu));
  EXPECT_FALSE(applies_relu(LinearEpilogue::kBias));
  EXPECT_FALSE(applies_relu(LinearEpilogue::kBiasGradientOfB));
}

TEST(LinearGemmPlan, TheReluProbesNanIsANanInEachType) {
  for (const DType data : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    const std::vector<uint8_t> nan = nan_bytes(data);
    ASSERT_EQ(nan.size(), size_of(data)) << name_of(data);
    EXPECT_TRUE(is_nan_bytes(data, nan)) << name_of(data);
    const std::vector<uint8_t> zero(size_of(data), 0);
    EXPECT_FALSE(is_nan_bytes(data, zero)) << name_of(data);
  }
  // What an fmaxf(x, 0) epilogue gives back is 0; an infinity is no NaN either.
  const uint16_t bf16_inf = 0x7f80, fp16_inf = 0x7c00;
  EXPECT_FALSE(is_nan_bytes(DType::kBFloat16, std::vector<uint8_t>{bf16_inf & 0xff, bf16_inf >> 8}));
  EXPECT_FALSE(is_nan_bytes(DType::kFloat16, std::vector<uint8_t>{fp16_inf & 0xff, fp16_inf >> 8}));
  EXPECT_TRUE(is_nan_bytes(DType::kFloat16, std::vector<uint8_t>{0x01, 0x7c})) << "a signalling NaN";
  EXPECT_THROW(
      {
        try {
          is_nan_bytes(DType::kFloat32, std::vector<uint8_t>{0, 0});
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "is_nan_bytes: 2 bytes are not one float32 value");
          throw;
        }
      },
      Error);
}

// Note [When cuBLASLt refuses a product]: each product asks cuBLASLt for less,
// one step at a time, and what it no longer gets runs as passes; the
// products are the same maths whichever epilogue runs with which passes.
TEST(LinearGemmPlan, ARefusedEpilogueFallsBackStepByStepToNone) {
  using E = LinearEpilogue;
  EXPECT_EQ(lt_epilogue_fallbacks(E::kBiasRelu), (std::vector<E>{E::kBiasRelu, E::kBias, E::kNone}));
  EXPECT_EQ(lt_epilogue_fallbacks(E::kBias), (std::vector<E>{E::kBias, E::kNone}));
  EXPECT_EQ(lt_epilogue_fallbacks(E::kRelu), (std::vector<E>{E::kRelu, E::kNone}));
  EXPECT_EQ(lt_epilogue_fallbacks(E::kBiasGradientOfB), (std::vector<E>{E::kBiasGradientOfB, E::kNone}));
  EXPECT_EQ(lt_epilogue_fallbacks(E::kNone), (std::vector<E>{E::kNone}));
  for (E wanted : {E::kNone, E::kBias, E::kRelu, E::kBiasRelu, E::kBiasGradientOfB}) {
    EXPECT_EQ(lt_epilogue_fallbacks(wanted).back(), E::kNone) << name_of(wanted);
    EXPECT_FALSE(passes_left(wanted, wanted).any()) << name_of(wanted);
  }
}

TEST(LinearGemmPlan, WhatAnEpilogueLeavesUndoneRunsAsPasses) {
  using E = LinearEpilogue;
  EXPECT_EQ(passes_left(E::kBiasRelu, E::kBias), (EpiloguePasses{.relu = true}));
  EXPECT_EQ(passes_left(E::kBiasRelu, E::kNone), (EpiloguePasses{.bias = true, .relu = true}));
  EXPECT_EQ(passes_left(E::kBias, E::kNone), (EpiloguePasses{.bias = true}));
  EXPECT_EQ(passes_left(E::kRelu, E::kNone), (EpiloguePasses{.relu = true}));
  EXPECT_EQ(passes_left(E::kBiasGradientOfB, E::kNone), (EpiloguePasses{.bias_gradient = true}));
  EXPECT_EQ(describe(passes_left(E::kBiasRelu, E::kNone)), "bias and ReLU as one pass of their own");
  EXPECT_EQ(describe(passes_left(E::kBiasRelu, E::kBias)), "ReLU as a pass of its own");
  EXPECT_EQ(describe(passes_left(E::kBias, E::kNone)), "bias as a pass of its own");
  EXPECT_EQ(describe(passes_left(E::kBiasGradientOfB, E::kNone)), "bias gradient as a pass of its own");
  EXPECT_EQ(describe(EpiloguePasses{.bias = true, .relu = true, .bias_gradient = true}),
            "bias and ReLU as one pass of their own; bias gradient as a pass of its own");
  EXPECT_EQ(describe(EpiloguePasses{}), "");

  // The forward with bias and ReLU, by each route: the product with the
  // epilogue it got, then the passes, in the order run() applies them.
  const LinearGemm g = linear_gemm(LinearGemmPass::kForward, kRows, kIn, kOut);
  Floats unused = b;
  const Floats whole = run(g, E::kBiasRelu, w, x, unused);
  for (E got : lt_epilogue_fallbacks(E::kBiasRelu)) {
    Floats bias = b;
    Floats y = run(g, got, w, x, bias);
    const EpiloguePasses passes = passes_left(E::kBiasRelu, got);
    for (int64_t row = 0; row < g.n; ++row) {
      for (int64_t o = 0; o < g.m; ++o) {
        float& v = y[static_cast<size_t>(row * g.m + o)];
        if (passes.bias) v += b[static_cast<size_t>(o)];
        if (passes.relu) v = std::max(v, 0.0f);
      }
    }
    EXPECT_EQ(y, whole) << "epilogue " << name_of(got);
  }
}

TEST(LinearGemmPlan, GemmExTakesSizesWithinIntOnly) {
  EXPECT_TRUE(fits_gemm_ex(linear_gemm(LinearGemmPass::kForward, 1, 9216, 4096)));
  EXPECT_TRUE(fits_gemm_ex(linear_gemm(LinearGemmPass::kBackwardWeights, 1, 1, 1)));
  EXPECT_FALSE(fits_gemm_ex(linear_gemm(LinearGemmPass::kForward, int64_t{INT_MAX} + 1, 4, 4)));
  EXPECT_FALSE(fits_gemm_ex(linear_gemm(LinearGemmPass::kBackwardWeights, int64_t{INT_MAX} + 1, 4, 4)));
}

}  // namespace
}  // namespace glassbox
