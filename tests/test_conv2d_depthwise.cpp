// tests/test_conv2d_depthwise.cpp: the direct depthwise path of the CPU
// convolution (layers/conv2d/conv2d_depthwise.cpp) against the general im2col + GEMM
// path, finite differences and the CUDA path, on odd shapes.
//
// The general path computes the same convolution as a dense one (groups 1)
// whose weight is zero except w'[k, k / multiplier] = w[k, 0]: input channel c
// feeds exactly the output channels of group c. groups 1 never takes the
// depthwise path, so the two runs share no code past the options.
#include <gtest/gtest.h>
#include <omp.h>

#include "layers/conv2d/conv2d.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

using Options = Conv2d::Options;

struct Case {
  std::string name;
  int channels;
  int multiplier;
  Options options;  // out_channels and groups are filled in from channels and multiplier
  Shape input;
};

std::ostream& operator<<(std::ostream& out, const Case& c) { return out << c.name; }

Options depthwise_options(const Case& c) {
  Options o = c.options;
  o.out_channels = c.channels * c.multiplier;
  o.groups = c.channels;
  return o;
}

// Chunks of output rows are about 512 floats on the padded width: "chunks"
// has 32-wide padded rows, so 16 rows a chunk, three chunks (16, 16, 8);
// "wide" has one 202-wide row per chunk. Rows are copied by whole vectors of
// 16, the last one overlapping the one before (Note [Short rows by whole
// vectors]): "rows_of_16" and "rows_of_32" have no overlap, "chunks" and
// "wide" have, the others are under 16 floats wide. "pad_past_kernel" has
// outputs that see only padding; "stride2" is left to the GEMM path, checked
// all the same.
const std::vector<Case> kCases = {
    {"k3_pad1", 4, 1, {.kernel = 3, .pad = 1, .bias = false}, Shape{2, 4, 7, 9}},
    {"multiplier2_bias", 3, 2, {.kernel = 3, .pad = 1}, Shape{2, 3, 6, 5}},
    {"k5_no_pad", 3, 1, {.kernel = 5, .bias = false}, Shape{1, 3, 9, 8}},
    {"dilation2", 2, 2, {.kernel = 3, .pad = 2, .dilation = 2, .bias = false}, Shape{2, 2, 9, 7}},
    {"k3x1_rect", 3, 1, {.kernel = {3, 1}, .pad = {1, 0}}, Shape{2, 3, 5, 6}},
    {"pad_past_kernel", 2, 1, {.kernel = 1, .pad = 2}, Shape{1, 2, 3, 4}},
    {"chunks", 3, 1, {.kernel = 3, .pad = 1, .bias = false}, Shape{2, 3, 40, 30}},
    {"wide", 2, 1, {.kernel = 3, .pad = 1, .bias = false}, Shape{1, 2, 5, 200}},
    {"rows_of_16", 2, 2, {.kernel = 3, .pad = 1}, Shape{2, 2, 4, 16}},
    {"rows_of_32", 2, 1, {.kernel = 3, .pad = 1, .bias = false}, Shape{1, 2, 3, 32}},
    {"stride2", 3, 2, {.kernel = 3, .stride = 2, .pad = 1, .bias = false}, Shape{2, 3, 7, 8}},
};

class DepthwiseCases : public ::testing::TestWithParam<Case> {};

TEST_P(DepthwiseCases, MatchesTheGeneralPathAsADenseConvolution) {
  const Case& c = GetParam();
  const Options o = depthwise_options(c);
  Options dense_options = o;
  dense_options.groups = 1;
  Context ctx = Context::cpu();
  Conv2d depthwise("depthwise", o), dense("dense", dense_options);
  testing::LayerHarness d(ctx, depthwise, {c.input}), g(ctx, dense, {c.input});
  d.randomize(5);
  g.randomize(6);  // then overwritten, but for the weight's zeros
  g.write(g.inputs[0], d.read(d.inputs[0]));
  g.write(g.output_grad, d.read(d.output_grad));
  if (o.bias) g.write(g.params[1], d.read(d.params[1]));
  const int64_t taps = int64_t{o.kernel.h} * o.kernel.w, k_count = o.out_channels;
  const std::vector<float> w = d.read(d.params[0]);  // (K, 1, R, S)
  std::vector<float> embedded(static_cast<size_t>(k_count * c.channels * taps), 0.0f);  // (K, C, R, S)
  auto at = [&](int64_t k, int64_t t) { return static_cast<size_t>((k * c.channels + k / c.multiplier) * taps + t); };
  for (int64_t k = 0; k < k_count; ++k) {
    for (int64_t t = 0; t < taps; ++t) embedded[at(k, t)] = w[static_cast<size_t>(k * taps + t)];
  }
  g.write(g.params[0], embedded);

  d.forward();
  g.forward();
  testing::expect_close(d.read(d.output), g.read(g.output), 1e-5, c.name + ": output");
  d.backward();
  g.backward();
  testing::expect_close(d.read(d.input_grads[0]), g.read(g.input_grads[0]), 1e-5, c.name + ": dx");
  const std::vector<float> dense_dw = g.read(g.param_grads[0]);
  std::vector<float> diagonal;
  for (int64_t k = 0; k < k_count; ++k) {
    for (int64_t t = 0; t < taps; ++t) diagonal.push_back(dense_dw[at(k, t)]);
  }
  testing::expect_close(d.read(d.param_grads[0]), diagonal, 1e-5, c.name + ": dw");
  if (o.bias) testing::expect_close(d.read(d.param_grads[1]), g.read(g.param_grads[1]), 1e-5, c.name + ": db");

  // kAdd onto what dx holds, with dw accumulating a second time.
  const std::vector<float> before = testing::random_values(c.input.numel(), 9);
  d.write(d.input_grads[0], before);
  g.write(g.input_grads[0], before);
  d.backward({GradMode::kAdd});
  g.backward({GradMode::kAdd});
  testing::expect_close(d.read(d.input_grads[0]), g.read(g.input_grads[0]), 1e-5, c.name + ": dx added");
}

TEST_P(DepthwiseCases, GradientsMatchFiniteDifferences) {
  const Case& c = GetParam();
  testing::check_gradients([&] { return std::make_unique<Conv2d>("depthwise", depthwise_options(c)); }, {c.input});
}

TEST_P(DepthwiseCases, CudaMatchesCpu) {
  const Case& c = GetParam();
  testing::check_cpu_cuda_parity([&] { return std::make_unique<Conv2d>("depthwise", depthwise_options(c)); },
                                 {c.input});
}

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseCases, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Forward and backward-data write disjoint planes; backward-filter sums each
// channel in a fixed order on one thread: the results are bit for bit the
// same on 1 and 3 threads (and 3 threads split 4 channels unevenly).
TEST(Conv2dDepthwise, ThreadCountDoesNotChangeOneBit) {
  const Case c = {"", 4, 2, {.kernel = 3, .pad = 1}, Shape{3, 4, 21, 19}};
  std::vector<std::vector<float>> runs[2];
  const int saved = omp_get_max_threads();
  for (int i = 0; i < 2; ++i) {
    omp_set_num_threads(i == 0 ? 1 : 3);  // the layer sizes its per-thread scratch at prepare
    Context ctx = Context::cpu();
    Conv2d conv("depthwise", depthwise_options(c));
    testing::LayerHarness h(ctx, conv, {c.input});
    h.randomize(11);
    h.forward();
    h.backward();
    runs[i] = {h.read(h.output), h.read(h.input_grads[0]), h.read(h.param_grads[0]), h.read(h.param_grads[1])};
  }
  omp_set_num_threads(saved);
  const char* what[] = {"output", "dx", "dw", "db"};
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(runs[0][t], runs[1][t]) << what[t];
}

}  // namespace
}  // namespace glassbox
