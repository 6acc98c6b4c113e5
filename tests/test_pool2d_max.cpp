// tests/test_pool2d_max.cpp: max pooling by blocks on the CPU (Note [Max
// pooling by blocks] in layers/pool2d/pool2d_max.cpp), and the 2x2 windows by lanes
// (layers/pool2d/pool2d_max_2x2.cpp), against the rule written out
// plainly: each output the max of its window, padding never winning, and its
// gradient to the window's first maximum in scan order. Values with many ties,
// planes wide enough for several blocks and a ragged last one, stride 1 and
// 2, padding, rectangular windows and ceil mode; both gradient modes; an
// inference plan (no argmax kept) gives the same outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "layers/pool2d/pool2d.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

using Mode = Pool2d::Mode;

struct Expected {
  std::vector<float> y, dx;
};

Expected plain_rule(const Shape& in, const Shape& out, const Pool2d::Window& w, const std::vector<float>& x,
                    const std::vector<float>& dy) {
  Expected e{{}, std::vector<float>(x.size(), 0.0f)};
  const int64_t planes = in[0] * in[1], h = in[2], wd = in[3], p_count = out[2], q_count = out[3];
  for (int64_t n = 0; n < planes; ++n) {
    for (int64_t p = 0; p < p_count; ++p) {
      for (int64_t q = 0; q < q_count; ++q) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t i = 0; i < w.kernel.h; ++i) {
          for (int64_t j = 0; j < w.kernel.w; ++j) {
            const int64_t r = p * w.stride.h - w.pad.h + i, c = q * w.stride.w - w.pad.w + j;
            if (r < 0 || r >= h || c < 0 || c >= wd) continue;
            const int64_t k = (n * h + r) * wd + c;
            const float v = x[static_cast<size_t>(k)];
            if (at < 0 || v > best) best = v, at = k;  // the first input, then only a strictly larger one
          }
        }
        e.y.push_back(best);
        e.dx[static_cast<size_t>(at)] += dy[static_cast<size_t>((n * p_count + p) * q_count + q)];
      }
    }
  }
  return e;
}

TEST(Pool2dMax, ByBlocksAndTwoByTwoLanesMatchThePlainRule) {
  struct Case {
    Pool2d::Window window;
    Shape x;
  };
  const std::vector<Case> cases = {
      {{.kernel = 3, .stride = 1, .pad = 1}, Shape{2, 3, 9, 40}},   // GoogLeNet's branch pools; 40 = 16 + 16 + 8
      {{.kernel = 3, .stride = 2, .pad = 1}, Shape{1, 2, 13, 37}},  // ResNet's stem pool
      {{.kernel = 3, .stride = 2, .pad = 1}, Shape{1, 2, 5, 75}},   // Xception's: 32 inputs a load, twice a row
      {{.kernel = 3, .stride = 2, .ceil_mode = true}, Shape{2, 2, 14, 34}},  // GoogLeNet's, overhanging
      {{.kernel = {2, 3}, .stride = {1, 2}, .pad = {1, 1}}, Shape{1, 2, 6, 21}},
      {{.kernel = 2, .stride = 1}, Shape{1, 1, 5, 18}},
      // 2x2 by lanes: LeNet's pool1, 14 outputs a row (the extra lanes read the
      // next row, the last row from padded copies); 35 = 16 + 16 + 3 outputs
      // with an odd last row and column; whole vectors only.
      {{.kernel = 2, .stride = 2}, Shape{2, 3, 28, 28}},
      {{.kernel = 2, .stride = 2}, Shape{1, 2, 7, 71}},
      {{.kernel = 2, .stride = 2}, Shape{1, 1, 2, 64}},
  };
  for (const Case& c : cases) {
    Context ctx = Context::cpu();
    Pool2d pool("pool", Mode::kMax, c.window);
    testing::LayerHarness h(ctx, pool, {c.x});
    std::mt19937 rng(3);
    std::vector<float> x(static_cast<size_t>(c.x.numel()));
    for (float& v : x) v = static_cast<float>(rng() % 3) - 1.0f;  // -1, 0, 1: ties everywhere
    const Shape out = h.output.shape();
    const std::vector<float> dy = testing::random_values(out.numel(), 4);
    const Expected e = plain_rule(c.x, out, c.window, x, dy);
    const std::string what = c.x.str() + " by " + pool.describe();
    h.write(h.inputs[0], x);
    h.write(h.output_grad, dy);
    h.poison(h.output);
    h.forward();
    EXPECT_EQ(h.read(h.output), e.y) << what;
    h.poison(h.input_grads[0]);
    h.backward();
    EXPECT_EQ(h.read(h.input_grads[0]), e.dx) << what << ": dx written";
    h.backward({GradMode::kAdd});
    std::vector<float> twice = e.dx;
    for (float& v : twice) v *= 2.0f;
    // Not bit for bit: an input that wins several windows adds their dy onto itself in another order.
    testing::expect_close(h.read(h.input_grads[0]), twice, 1e-6, what + ": dx added");

    Pool2d inferring("pool", Mode::kMax, c.window);  // an inference plan keeps no argmax
    inferring.bind(std::vector<Shape>{c.x});
    inferring.prepare(ctx, {.phase = Phase::kInference});
    ctx.reserve_workspace(inferring.workspace_bytes());
    const Tensor y = ctx.allocate(out, DType::kFloat32, MemoryCategory::kActivations);
    inferring.forward(ctx, {.inputs = h.inputs, .output = y, .params = {}, .phase = Phase::kInference});
    EXPECT_EQ(h.read(y), e.y) << what << ": inference plan";
  }
}

// A window whose inputs are all -inf has the max -inf, and its gradient goes
// to its first input, as in Pool2d's loops.
TEST(Pool2dMax, AWindowOfMinusInfinitiesSendsItsGradientToItsFirstInput) {
  Context ctx = Context::cpu();
  Pool2d pool("pool", Mode::kMax, {.kernel = 3, .stride = 1, .pad = 1});
  testing::LayerHarness h(ctx, pool, {Shape{1, 1, 2, 2}});
  const float inf = std::numeric_limits<float>::infinity();
  h.write(h.inputs[0], {-inf, -inf, -inf, -inf});
  h.write(h.output_grad, {1.0f, 2.0f, 3.0f, 4.0f});
  h.forward();
  EXPECT_EQ(h.read(h.output), std::vector<float>(4, -inf));
  h.backward();
  EXPECT_EQ(h.read(h.input_grads[0]), (std::vector<float>{10.0f, 0.0f, 0.0f, 0.0f}));
}

// The same rule where the all -inf windows lie anywhere in wider planes, each
// with its own first input: blocks of two rows and a last single one (an odd
// number of output rows), ragged last blocks, strides 1 and 2.
TEST(Pool2dMax, MinusInfinityWindowsInsideThePlaneSendTheirGradientToTheirFirstInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const Pool2d::Window& window : {Pool2d::Window{.kernel = 3, .stride = 1, .pad = 1},
                                       Pool2d::Window{.kernel = 3, .stride = 2, .pad = 1}}) {
    Context ctx = Context::cpu();
    Pool2d pool("pool", Mode::kMax, window);
    const Shape in{1, 2, 9, 37};
    testing::LayerHarness h(ctx, pool, {in});
    std::vector<float> x(static_cast<size_t>(in.numel()), -inf);
    for (size_t k = 0; k < x.size(); k += 23) x[k] = static_cast<float>(k % 5);  // a few finite values
    const Shape out = h.output.shape();
    const std::vector<float> dy = testing::random_values(out.numel(), 6);
    const Expected e = plain_rule(in, out, window, x, dy);
    ASSERT_NE(std::count(e.y.begin(), e.y.end(), -inf), 0) << "no window of -inf only";
    ASSERT_NE(std::count(e.y.begin(), e.y.end(), -inf), static_cast<ptrdiff_t>(e.y.size())) << "no finite window";
    h.write(h.inputs[0], x);
    h.write(h.output_grad, dy);
    h.forward();
    EXPECT_EQ(h.read(h.output), e.y) << pool.describe();
    h.backward();
    EXPECT_EQ(h.read(h.input_grads[0]), e.dx) << pool.describe();
  }
}

}  // namespace
}  // namespace glassbox
