// tests/test_pool2d_nan.cpp: max pooling propagates NaN on every CPU path
// (Note [Max pooling propagates NaN] in layers/pool2d/pool2d.cpp): a window holding a
// NaN pools to NaN and sends its gradient to its last NaN in scan order, as
// PyTorch's max pooling does; other windows keep the first maximum. Checked
// against that rule written out plainly, on the loops (column stride 3), the
// whole-plane forward (global), the blocks (stride 1 and 2), the 2x2 forward
// and backward by lanes and the NHWC path, to NHWC and to NCHW.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "graph/layouts.h"
#include "layers/pool2d/pool2d.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

using Mode = Pool2d::Mode;

struct Expected {
  std::vector<float> y, dx;
  int nan_windows = 0, windows_of_two_nans = 0;
};

Expected plain_rule(const Shape& in, const Shape& out, const Pool2d::Window& w, const std::vector<float>& x,
                    const std::vector<float>& dy) {
  Expected e{{}, std::vector<float>(x.size(), 0.0f)};
  const int64_t planes = in[0] * in[1], h = in[2], wd = in[3], p_count = out[2], q_count = out[3];
  for (int64_t n = 0; n < planes; ++n) {
    for (int64_t p = 0; p < p_count; ++p) {
      for (int64_t q = 0; q < q_count; ++q) {
        float best = 0.0f;
        int64_t at = -1;
        int nans = 0;
        for (int64_t i = 0; i < w.kernel.h; ++i) {
          for (int64_t j = 0; j < w.kernel.w; ++j) {
            const int64_t r = p * w.stride.h - w.pad.h + i, c = q * w.stride.w - w.pad.w + j;
            if (r < 0 || r >= h || c < 0 || c >= wd) continue;
            const int64_t k = (n * h + r) * wd + c;
            const float v = x[static_cast<size_t>(k)];
            nans += std::isnan(v) ? 1 : 0;
            if (at < 0 || v > best || std::isnan(v)) best = v, at = k;
          }
        }
        e.nan_windows += nans > 0 ? 1 : 0;
        e.windows_of_two_nans += nans > 1 ? 1 : 0;
        e.y.push_back(best);
        e.dx[static_cast<size_t>(at)] += dy[static_cast<size_t>((n * p_count + p) * q_count + q)];
      }
    }
  }
  return e;
}

// -1, 0, 1 (ties), -inf now and then, NaN one time in eight; the first plane has no NaN.
std::vector<float> values_with_nans(const Shape& shape) {
  std::mt19937 rng(11);
  std::vector<float> x(static_cast<size_t>(shape.numel()));
  for (float& v : x) {
    const uint32_t draw = rng() % 40;
    v = draw < 5 ? std::numeric_limits<float>::quiet_NaN()
                 : draw < 8 ? -std::numeric_limits<float>::infinity() : static_cast<float>(draw % 3) - 1.0f;
  }
  for (int64_t k = 0; k < shape[2] * shape[3]; ++k) {
    if (std::isnan(x[static_cast<size_t>(k)])) x[static_cast<size_t>(k)] = 2.0f;
  }
  return x;
}

// Equal element by element, a NaN matching a NaN.
void expect_same(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int wrong = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool same = std::isnan(expected[i]) ? std::isnan(actual[i]) : actual[i] == expected[i];
    if (!same && ++wrong <= 3) ADD_FAILURE() << what << ": [" << i << "] is " << actual[i] << ", expected " << expected[i];
  }
  EXPECT_EQ(wrong, 0) << what;
}

struct Case {
  Pool2d::Window window;
  Shape x;
  const char* path;
};

void expect_windows_hold_nans(const Expected& e, const std::string& what) {
  EXPECT_GT(e.nan_windows, 0) << what << ": the data must put NaNs in windows";
  EXPECT_LT(e.nan_windows, static_cast<int>(e.y.size())) << what << ": and leave some windows without";
}

TEST(Pool2dNan, EveryNchwPathPoolsANanToNanAndRoutesToTheLastNan) {
  const std::vector<Case> cases = {
      {{.kernel = 3, .stride = 3}, Shape{2, 2, 9, 10}, "the loops (column stride 3)"},
      {{.kernel = 3, .stride = {2, 3}, .pad = 1}, Shape{1, 3, 8, 13}, "the loops, padded"},
      {{.global = true}, Shape{2, 3, 5, 6}, "the whole plane"},
      {{.kernel = 3, .stride = 1, .pad = 1}, Shape{2, 3, 9, 40}, "the blocks, stride 1"},
      {{.kernel = 3, .stride = 2, .ceil_mode = true}, Shape{2, 2, 14, 34}, "the blocks, stride 2, ceil"},
      {{.kernel = 2, .stride = 2}, Shape{2, 3, 7, 71}, "the 2x2 windows by lanes"},
      {{.kernel = 2, .stride = 2}, Shape{2, 3, 28, 28}, "the 2x2 windows by lanes, rows of 14 outputs"},
  };
  int multi_nan_windows = 0;
  for (const Case& c : cases) {
    Context ctx = Context::cpu();
    Pool2d pool("pool", Mode::kMax, c.window);
    testing::LayerHarness h(ctx, pool, {c.x});
    const std::vector<float> x = values_with_nans(c.x);
    const Shape out = h.output.shape();
    const std::vector<float> dy = testing::random_values(out.numel(), 8);
    const Expected e = plain_rule(c.x, out, pool.window(), x, dy);
    const std::string what = c.x.str() + " by " + pool.describe() + " (" + c.path + ")";
    expect_windows_hold_nans(e, what);
    multi_nan_windows += e.windows_of_two_nans;
    h.write(h.inputs[0], x);
    h.write(h.output_grad, dy);
    h.poison(h.output);
    h.forward();
    expect_same(h.read(h.output), e.y, what + ": y");
    h.poison(h.input_grads[0]);
    h.backward();
    expect_same(h.read(h.input_grads[0]), e.dx, what + ": dx");
  }
  EXPECT_GT(multi_nan_windows, 0) << "no window held two NaNs: the last-NaN rule went untested";
}

TEST(Pool2dNan, TheNhwcPathPoolsANanToNanAndRoutesToTheLastNan) {
  const std::vector<Case> cases = {
      {{.kernel = 2, .stride = 2}, Shape{2, 32, 8, 10}, "VGG's"},
      {{.kernel = 3, .stride = 2, .pad = 1}, Shape{1, 16, 9, 11}, "ResNet's stem"},
  };
  for (const Case& c : cases) {
    for (bool y_nhwc : {true, false}) {
      Context ctx = Context::cpu();
      Pool2d pool("pool", Mode::kMax, c.window);
      testing::LayerHarness h(ctx, pool, {c.x});
      ASSERT_TRUE(pool.can_read_channels_last(0));
      pool.set_channels_last({true}, y_nhwc);
      const Shape out = h.output.shape();  // (N, C, P, Q) whatever the layout
      pool.prepare(ctx);
      const Layout y_layout = y_nhwc ? Layout::kNHWC : Layout::kNCHW;
      h.inputs[0] = h.inputs[0].with_layout(Layout::kNHWC), h.input_grads[0] = h.input_grads[0].with_layout(Layout::kNHWC);
      h.output = h.output.with_layout(y_layout), h.output_grad = h.output_grad.with_layout(y_layout);
      const std::vector<float> x = values_with_nans(c.x);
      const std::vector<float> dy = testing::random_values(out.numel(), 8);
      const Expected e = plain_rule(c.x, out, pool.window(), x, dy);
      const std::string what = c.x.str() + " by " + pool.describe() + " (" + c.path + ", NHWC to " +
                               (y_nhwc ? "NHWC)" : "NCHW)");
      expect_windows_hold_nans(e, what);
      auto to_y_layout = [&](const std::vector<float>& v) { return y_nhwc ? channels_last_from_nchw(v, out) : v; };
      h.write(h.inputs[0], channels_last_from_nchw(x, c.x));
      h.write(h.output_grad, to_y_layout(dy));
      h.poison(h.output);
      h.forward();
      expect_same(h.read(h.output), to_y_layout(e.y), what + ": y");
      h.poison(h.input_grads[0]);
      h.backward();
      expect_same(h.read(h.input_grads[0]), channels_last_from_nchw(e.dx, c.x), what + ": dx");
    }
  }
}

}  // namespace
}  // namespace glassbox
