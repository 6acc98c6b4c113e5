// tests/test_cpu_gemm.cpp: Eigen's float products on the library each layout
// is sent to (Note [Eigen's GEMM on oneDNN's sgemm], tensor/gemm_onednn.cpp),
// against a plain sum in double: every transposition, strided operands (a
// block of a larger matrix, as the layers' blocks are), =, += and -=, on one
// thread and inside an OpenMP team.
#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "tensor/cpu_blas.h"
#include "tensor/eigen_maps.h"
#include "tensor/product.h"
#include "tests/support/command.h"

namespace glassbox {
namespace {

constexpr bool kShimBuilt = GLASSBOX_GEMM_ONEDNN;  // -DGLASSBOX_BLAS=oneDNN (cmake/CpuBlas.cmake)

// An operand stored as a block of a wider row-major matrix: `rows` x `cols`
// read with a row stride of `cols + 7`.
struct Operand {
  int64_t rows, cols, stride;
  std::vector<float> data;
  Operand(int64_t r, int64_t c, int seed) : rows(r), cols(c), stride(c + 7), data(static_cast<size_t>(r * (c + 7))) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((i * 7 + seed) % 11) * 0.25f - 1.25f;
  }
  StridedMatrixMap map() { return StridedMatrixMap(data.data(), rows, cols, Eigen::OuterStride<>(stride)); }
  double at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * stride + c)]; }
};

enum class Assign { kSet, kAdd, kSubtract, kProductInto, kProductIntoAdd };

// C (m x n) = or += or -= op(A) op(B), row-major, with op a transpose where asked.
struct Case {
  bool a_transposed, b_transposed;
  Assign assign;
};

// The rule of Note [Eigen's GEMM on oneDNN's sgemm], restated: A B^T, and
// A^T B of fewer than kNarrowColumnsOnOpenBlas columns, run on OpenBLAS where
// its kernels fit this CPU (Note [OpenBLAS on CPUs it does not know]).
bool expect_openblas(const Case& c, int64_t columns) {
  return openblas_kernels_fit_cpu() && ((!c.a_transposed && c.b_transposed) ||
                                        (c.a_transposed && !c.b_transposed && columns < kNarrowColumnsOnOpenBlas));
}

// C is a block of a wider matrix too (row stride n + 3), as a layer's block of
// output features is; every entry of it starts as `initial`.
void run_case(const Case& c, int64_t m, int64_t n, int64_t k, float initial = 0.5f) {
  Operand a = c.a_transposed ? Operand(k, m, 1) : Operand(m, k, 1);
  Operand b = c.b_transposed ? Operand(n, k, 2) : Operand(k, n, 2);
  const int64_t ldc = n + 3;
  std::vector<float> out(static_cast<size_t>(m * ldc), initial);
  StridedMatrixMap y(out.data(), m, n, Eigen::OuterStride<>(ldc));
  auto product = [&](auto&& lhs, auto&& rhs) {
    switch (c.assign) {
      case Assign::kSet: y.noalias() = lhs * rhs; break;
      case Assign::kAdd: y.noalias() += lhs * rhs; break;
      case Assign::kSubtract: y.noalias() -= lhs * rhs; break;
      case Assign::kProductInto: product_into(y, lhs, rhs); break;
      case Assign::kProductIntoAdd: product_into(y, lhs, rhs, true); break;
    }
  };
  if (c.a_transposed && c.b_transposed) product(a.map().transpose(), b.map().transpose());
  else if (c.a_transposed) product(a.map().transpose(), b.map());
  else if (c.b_transposed) product(a.map(), b.map().transpose());
  else product(a.map(), b.map());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        sum += (c.a_transposed ? a.at(p, i) : a.at(i, p)) * (c.b_transposed ? b.at(j, p) : b.at(p, j));
      }
      const double expected = c.assign == Assign::kSet || c.assign == Assign::kProductInto ? sum
                              : c.assign == Assign::kSubtract                            ? initial - sum
                                                                                         : initial + sum;
      ASSERT_NEAR(out[static_cast<size_t>(i * ldc + j)], expected, 1e-3 * (1.0 + std::abs(expected)))
          << "at (" << i << ", " << j << ") of " << m << "x" << n << "x" << k;
    }
  }
  for (int64_t i = 0; i < m; ++i) {  // the columns past the block are not C's
    for (int64_t j = n; j < ldc; ++j) {
      const float past = out[static_cast<size_t>(i * ldc + j)];
      ASSERT_EQ(std::bit_cast<uint32_t>(past), std::bit_cast<uint32_t>(initial)) << "written outside C";
    }
  }
}

const Case kCases[] = {
    {false, false, Assign::kSet},      {false, true, Assign::kSet},      {true, false, Assign::kSet},
    {true, true, Assign::kSet},        {false, false, Assign::kAdd},     {false, true, Assign::kAdd},
    {true, false, Assign::kSubtract},  {true, true, Assign::kSubtract},
    // Note [Products without Eigen's zeroing pass] (tensor/product.h): one sgemm_ call each.
    {false, false, Assign::kProductInto}, {false, true, Assign::kProductInto},  {true, false, Assign::kProductInto},
    {true, true, Assign::kProductIntoAdd}, {false, true, Assign::kProductIntoAdd},
};

std::string describe(const Case& c) {
  const char* names[] = {"=", "+=", "-=", "= (product_into)", "+= (product_into)"};
  const char* assign = names[static_cast<int>(c.assign)];
  return std::string("C ") + assign + " A" + (c.a_transposed ? "^T" : "") + " B" + (c.b_transposed ? "^T" : "");
}

// Large enough that Eigen hands them to the BLAS; 29 columns are narrow, 300 are not.
TEST(CpuGemm, EveryLayoutMatchesThePlainSumOnTheLibraryItIsSentTo) {
  for (const int64_t columns : {int64_t{29}, int64_t{300}}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(describe(c) + ", " + std::to_string(columns) + " columns");
      const GemmCalls before = cpu_gemm_calls();
      run_case(c, 37, columns, 53);
      const GemmCalls after = cpu_gemm_calls();
      if (!kShimBuilt) {
        EXPECT_EQ(after.onednn + after.openblas, 0) << "no sgemm_ of Glassbox's own in this build";
        continue;
      }
      EXPECT_EQ(after.openblas - before.openblas, expect_openblas(c, columns) ? 1 : 0);
      EXPECT_EQ(after.onednn - before.onednn, expect_openblas(c, columns) ? 0 : 1);
    }
  }
  // Read by the next test, which runs this one in a child process.
  std::cout << "products on OpenBLAS: " << cpu_gemm_calls().openblas << "\n";
}

// Where the loaded OpenBLAS does not know this CPU, the test above sends every
// product to oneDNN; run again with OpenBLAS's kernels for this CPU forced
// (OPENBLAS_CORETYPE, read as it loads), it checks the OpenBLAS route too.
TEST(CpuGemm, TheOpenBlasRouteWorksWhereItsKernelsAreForcedToFitTheCpu) {
  if (!kShimBuilt) GTEST_SKIP() << "no sgemm_ of Glassbox's own in this build: nothing to route";
  if (openblas_kernels_fit_cpu()) GTEST_SKIP() << "OpenBLAS's own choice fits this CPU: the test above took its route";
  const int bits = cpu_vector_bits();
  if (bits < 256) GTEST_SKIP() << "no AVX2 on this CPU: OpenBLAS's kernels for it are all that fit";
  const std::string core = bits == 512 ? "SkylakeX" : "Haswell";
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const testing::CommandOutcome r = testing::run_command(
      "OPENBLAS_CORETYPE=" + core + " " + self + " --gtest_filter=CpuGemm.EveryLayoutMatchesThePlainSumOnTheLibraryItIsSentTo");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(testing::contains(r.output, "[  PASSED  ] 1 test")) << r.output;
  EXPECT_TRUE(testing::contains(r.output, "products on OpenBLAS: ")) << r.output;
  EXPECT_FALSE(testing::contains(r.output, "products on OpenBLAS: 0\n")) << r.output;
}

// The layers call products from their own OpenMP teams, one block per thread:
// each thread's product must be its own (no shared scratch between them).
TEST(CpuGemm, ProductsOnEveryThreadOfATeamMatchThePlainSum) {
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "one OpenMP thread: no team to run products in";
#pragma omp parallel num_threads(2)
  {
    for (const Case& c : kCases) {
      SCOPED_TRACE(describe(c) + " on thread " + std::to_string(omp_get_thread_num()));
      run_case(c, 40 + omp_get_thread_num() * 9, 33, 70);  // a different product on each thread
    }
  }
}

// beta = 0 means C's old contents are not read: memory planned for one tensor
// held another's, NaN included, and none of it may leak through (0 * NaN is NaN).
TEST(CpuGemm, ProductIntoOverwritesWhateverDstHeld) {
  for (const int64_t columns : {int64_t{29}, int64_t{300}}) {
    for (const bool a_t : {false, true}) {
      for (const bool b_t : {false, true}) {
        const Case c{a_t, b_t, Assign::kProductInto};
        SCOPED_TRACE(describe(c) + ", " + std::to_string(columns) + " columns");
        run_case(c, 37, columns, 53, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
}

// Products too small for a BLAS (Eigen's own threshold) or of one row or
// column keep Eigen's product; the answer is the same either way.
TEST(CpuGemm, ProductIntoSmallAndVectorShapesMatchThePlainSum) {
  const int64_t shapes[][3] = {{3, 4, 5}, {1, 40, 30}, {40, 1, 30}, {2, 2, 1}};
  for (const auto& [m, n, k] : shapes) {
    for (const Case& c : {Case{false, true, Assign::kProductInto}, Case{true, false, Assign::kProductIntoAdd}}) {
      SCOPED_TRACE(describe(c) + " at " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
      run_case(c, m, n, k);
    }
  }
}

}  // namespace
}  // namespace glassbox
