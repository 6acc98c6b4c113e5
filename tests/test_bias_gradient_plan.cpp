// tests/test_bias_gradient_plan.cpp: the bias gradient as cuBLAS computes
// it on a GPU (layers/bias_gradient_plan.h), checked here without one: the
// plan's products, run by a plain column-major matrix-vector product on dy as
// it lies in memory, sum dy over every axis but the channels, in either
// layout and at every edge of the shapes.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "layers/bias_gradient_plan.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using Floats = std::vector<float>;

// y (m) = beta * y + op(A) ones, A column-major rows x columns (leading
// dimension rows), op(A) = A^T where `transpose`, as cublasGemmEx with n = 1.
void product_with_ones(const Floats& a, int64_t rows, int64_t columns, bool transpose, float beta, Floats& y) {
  const int64_t m = transpose ? columns : rows, k = transpose ? rows : columns;
  ASSERT_EQ(static_cast<int64_t>(y.size()), m);
  for (int64_t i = 0; i < m; ++i) {
    float sum = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
      sum += transpose ? a[static_cast<size_t>(i * rows + p)] : a[static_cast<size_t>(p * rows + i)];
    }
    y[static_cast<size_t>(i)] = beta * y[static_cast<size_t>(i)] + sum;
  }
}

// db += the plan run on dy.
void run(const BiasGradientPlan& plan, const Floats& dy, Floats& db) {
  ASSERT_EQ(static_cast<int64_t>(dy.size()), plan.a_rows * plan.a_columns);
  if (plan.partial_size() == 0) {
    product_with_ones(dy, plan.a_rows, plan.a_columns, plan.transpose_a, 1.0f, db);
    return;
  }
  Floats partial(static_cast<size_t>(plan.transpose_a ? plan.a_columns : plan.a_rows), -7.0f);  // beta 0 ignores it
  ASSERT_EQ(static_cast<int64_t>(partial.size()), plan.partial_size());
  product_with_ones(dy, plan.a_rows, plan.a_columns, plan.transpose_a, 0.0f, partial);
  product_with_ones(partial, plan.channels, plan.second_ones, false, 1.0f, db);
}

// dy (N, K, P) channels-first or (N, P, K) channels-last, element values that
// tell their place: the sum over (n, p) of channel k is unique to k.
Floats make_dy(int64_t n, int64_t k, int64_t p, Layout layout) {
  Floats dy(static_cast<size_t>(n * k * p));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t j = 0; j < p; ++j) {
        const size_t at = static_cast<size_t>(layout == Layout::kNCHW ? (i * k + c) * p + j : (i * p + j) * k + c);
        dy[at] = static_cast<float>((c + 1) * 100 + i * 7 + j % 5);
      }
    }
  }
  return dy;
}

Floats expected_sums(int64_t n, int64_t k, int64_t p, float start) {
  Floats db(static_cast<size_t>(k), start);
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < p; ++j) db[static_cast<size_t>(c)] += static_cast<float>((c + 1) * 100 + i * 7 + j % 5);
    }
  }
  return db;
}

struct Case {
  int64_t images, channels, pixels;
};

class BiasGradientPlanTest : public ::testing::TestWithParam<Layout> {};

TEST_P(BiasGradientPlanTest, ThePlanSumsDyOverEveryAxisButTheChannelsAndAddsIntoDb) {
  const Layout layout = GetParam();
  for (const Case c : {Case{2, 3, 4}, Case{1, 3, 4}, Case{5, 3, 1}, Case{1, 6, 1}, Case{4, 1, 9}, Case{3, 2, 49},
                       Case{1, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << c.images << " x " << c.channels << " x " << c.pixels);
    const BiasGradientPlan plan = plan_bias_gradient(c.images, c.channels, c.pixels, layout);
    EXPECT_EQ(plan.channels, c.channels);
    Floats db(static_cast<size_t>(c.channels), 0.5f);  // added into, not overwritten
    run(plan, make_dy(c.images, c.channels, c.pixels, layout), db);
    EXPECT_EQ(db, expected_sums(c.images, c.channels, c.pixels, 0.5f));
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, BiasGradientPlanTest, ::testing::Values(Layout::kNCHW, Layout::kNHWC),
                         [](const auto& info) { return std::string(name_of(info.param)); });

TEST(BiasGradientPlan, OneProductWhereTheSecondWouldSumOneColumn) {
  // A Linear's (N, O): O x N times ones(N), straight into db.
  const BiasGradientPlan rows = plan_bias_gradient(32, 10, 1, Layout::kNCHW);
  EXPECT_EQ(rows, (BiasGradientPlan{.a_rows = 10, .a_columns = 32, .transpose_a = false, .channels = 10,
                                    .second_ones = 1}));
  EXPECT_EQ(rows.partial_size(), 0);
  EXPECT_EQ(rows.first_ones(), 32);
  // One image: its K x P channels-last or P x K channels-first.
  EXPECT_EQ(plan_bias_gradient(1, 8, 49, Layout::kNHWC).partial_size(), 0);
  EXPECT_EQ(plan_bias_gradient(1, 8, 49, Layout::kNHWC).first_ones(), 49);
  EXPECT_EQ(plan_bias_gradient(1, 8, 49, Layout::kNCHW).partial_size(), 0);
  EXPECT_EQ(plan_bias_gradient(1, 8, 49, Layout::kNCHW).first_ones(), 49);
}

TEST(BiasGradientPlan, TwoProductsHoldTheirPartialSumsInFloat32) {
  // (64, 96, 55*55): channels-first sums each plane first, channels-last each
  // pixel's channels over the images first.
  const BiasGradientPlan nchw = plan_bias_gradient(64, 96, 3025, Layout::kNCHW);
  EXPECT_TRUE(nchw.transpose_a);
  EXPECT_EQ(nchw.first_ones(), 3025);
  EXPECT_EQ(nchw.partial_size(), 64 * 96);
  const BiasGradientPlan nhwc = plan_bias_gradient(64, 96, 3025, Layout::kNHWC);
  EXPECT_FALSE(nhwc.transpose_a);
  EXPECT_EQ(nhwc.first_ones(), 64);
  EXPECT_EQ(nhwc.partial_size(), 96 * 3025);
}

TEST(BiasGradientPlan, RejectsEmptySizesAndMatricesBeyondCublasInt) {
  EXPECT_EQ(testing::message_of<ShapeError>([] { plan_bias_gradient(0, 3, 4, Layout::kNCHW); }),
            "bias gradient: dy of 0 images, 3 channels and 4 pixels (each at least 1)");
  EXPECT_THROW(plan_bias_gradient(2, 0, 4, Layout::kNHWC), ShapeError);
  EXPECT_THROW(plan_bias_gradient(2, 3, -1, Layout::kNCHW), ShapeError);
  // 2^16 images of 2^16 channels: the channels-first A has 2^32 columns.
  EXPECT_EQ(testing::message_of<ShapeError>([] {
              plan_bias_gradient(int64_t{1} << 16, int64_t{1} << 16, 2, Layout::kNCHW);
            }),
            "bias gradient: dy of 65536 x 65536 x 2 is beyond cuBLAS's int range as a 2 x 4294967296 matrix");
  EXPECT_NO_THROW(plan_bias_gradient(INT_MAX, 1, 1, Layout::kNHWC));
}

}  // namespace
}  // namespace glassbox
