// tests/test_linear.cpp
#include <gtest/gtest.h>

#include <tuple>

#include "layers/linear/linear.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

TEST(Linear, ForwardIsXWTransposePlusBias) {
  Context ctx = Context::cpu();
  Linear fc("fc", {.out_features = 2});
  testing::LayerHarness h(ctx, fc, {Shape{1, 3}});
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f});
  h.write(h.params[0], {1.0f, 0.0f, -1.0f,   // row 0
                        0.5f, 0.5f, 0.5f});  // row 1
  h.write(h.params[1], {10.0f, 20.0f});
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{8.0f, 23.0f}));
}

// The batches below: every one from 1 to 10, then 12, 16, 33 and 1100; from 16
// on a product takes a block per thread (Note [Blocks of a product over the
// threads]).
const std::vector<int64_t> kBatches = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 33, 1100};

// What runs the forward of `out` features at `rows` rows: Note [Linear forward
// at small batches] up to 16 rows, Note [Linear forward on oneDNN's matmul]
// from 17 to 1024 rows and 16 features out, else Eigen's products.
std::string expected_forward_path(int64_t rows, int64_t out) {
  if (rows <= 16) return "Glassbox streamed weights";
  if (GLASSBOX_WITH_ONEDNN && rows <= 1024 && out >= 16) return "oneDNN matmul";
  return "Eigen";
}

// Every batch of kBatches with 131 features out, and 33 and 1100 rows with 10.
std::vector<std::pair<int64_t, int64_t>> forward_cases() {
  std::vector<std::pair<int64_t, int64_t>> cases;
  for (const int64_t n : kBatches) cases.emplace_back(n, 131);
  cases.emplace_back(33, 10);
  cases.emplace_back(1100, 10);
  return cases;
}
const std::vector<std::pair<int64_t, int64_t>> kForwardCases = forward_cases();

// Every batch of kBatches, against sums in double, on each of the forward's
// three paths: the streamed one (pairs of rows, kFloatLanes lanes, a tail; groups of 8
// rows and a ragged last one), oneDNN's matmul and Eigen's products (from
// 1025 rows, or fewer than 16 features out); widths with and without a tail
// past the last 16, an odd last weight row, several blocks of output features.
TEST(Linear, ForwardAtEveryBatchMatchesSumsInDouble) {
  for (const int64_t in : {37, 48}) {
    for (const bool bias : {true, false}) {
      for (const auto& [n, out] : kForwardCases) {
        Context ctx = Context::cpu();
        Linear fc("fc", {.out_features = static_cast<int>(out), .bias = bias});
        testing::LayerHarness h(ctx, fc, {Shape{n, in}});
        EXPECT_TRUE(fc.algorithms().starts_with(expected_forward_path(n, out)))
            << "batch " << n << ", " << out << " out: " << fc.algorithms();
        h.randomize(static_cast<uint64_t>(n * 7 + in));
        h.forward();
        const std::vector<float> x = h.read(h.inputs[0]), w = h.read(h.params[0]);
        const std::vector<float> b = bias ? h.read(h.params[1]) : std::vector<float>(out, 0.0f);
        std::vector<float> expected(static_cast<size_t>(n * out));
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t o = 0; o < out; ++o) {
            double sum = b[static_cast<size_t>(o)];
            for (int64_t i = 0; i < in; ++i) {
              sum += static_cast<double>(x[static_cast<size_t>(r * in + i)]) * w[static_cast<size_t>(o * in + i)];
            }
            expected[static_cast<size_t>(r * out + o)] = static_cast<float>(sum);
          }
        }
        testing::expect_close(h.read(h.output), expected, 1e-5,
                              cat("batch ", n, ", ", in, " -> ", out, " features, bias ", bias));
      }
    }
  }
}

// dx = dy w of a bound harness (n rows, in -> out), written over NaN (so every
// element must be) and then added, against sums in double.
void expect_backward_data_matches_sums_in_double(testing::LayerHarness& h, int64_t n, int64_t in, int64_t out) {
  h.forward();
  const std::vector<float> dy = h.read(h.output_grad), w = h.read(h.params[0]);
  std::vector<float> expected(static_cast<size_t>(n * in));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < in; ++i) {
      double sum = 0.0;
      for (int64_t o = 0; o < out; ++o) {
        sum += static_cast<double>(dy[static_cast<size_t>(r * out + o)]) * w[static_cast<size_t>(o * in + i)];
      }
      expected[static_cast<size_t>(r * in + i)] = static_cast<float>(sum);
    }
  }
  h.poison(h.input_grads[0]);
  h.backward();
  testing::expect_close(h.read(h.input_grads[0]), expected, 1e-5, cat("dx written, batch ", n, ", ", in, " in"));
  h.backward({GradMode::kAdd});
  for (float& v : expected) v *= 2.0f;
  testing::expect_close(h.read(h.input_grads[0]), expected, 1e-5, cat("dx added, batch ", n, ", ", in, " in"));
}

// The backward-data up to 16 rows streams the weights too (four weight rows
// at a time, then the odd ones: 131 = 4 x 32 + 3), over one column block and
// over several: up to 2 rows a thread's share of 2100 columns, from 3 rows
// blocks of 1024 and a ragged 52 (Note [Streamed backward-data by wide blocks]).
TEST(Linear, BackwardDataAtEveryBatchMatchesSumsInDouble) {
  for (const int64_t in : {37, 2100}) {
    for (const int64_t n : kBatches) {
      const int64_t out = 131;
      Context ctx = Context::cpu();
      Linear fc("fc", {.out_features = out});
      testing::LayerHarness h(ctx, fc, {Shape{n, in}});
      h.randomize(static_cast<uint64_t>(n * 5 + in));
      expect_backward_data_matches_sums_in_double(h, n, in, out);
    }
  }
}

// With a multiple of 1024 features in, from 17 to 127 rows and 64 outputs or
// more, the build on oneDNN's sgemm copies the weights by tiles of 64 x up to
// 1024 (Note [Weights whose rows alias in the cache]): 2048 and 1024 features
// (narrower tiles, one block a thread), 131 outputs (tiles of 64, 64 and a
// ragged 3), at both ends of its rows and just past them (128 rows, and 63
// outputs: in place).
TEST(Linear, BackwardDataByTilesMatchesSumsInDouble) {
  for (const auto& [n, in, out] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {17, 2048, 131}, {127, 2048, 131}, {40, 1024, 131}, {128, 2048, 131}, {33, 2048, 63}}) {
    Context ctx = Context::cpu();
    Linear fc("fc", {.out_features = static_cast<int>(out)});
    testing::LayerHarness h(ctx, fc, {Shape{n, in}});
    const bool tiled = GLASSBOX_GEMM_ONEDNN && n <= 127 && out >= 64;
    EXPECT_EQ(fc.algorithms().find("dx by padded tiles") != std::string::npos, tiled)
        << "batch " << n << ", " << out << " out: " << fc.algorithms();
    h.randomize(static_cast<uint64_t>(n * 11 + out));
    expect_backward_data_matches_sums_in_double(h, n, in, out);
  }
}

// The weight gradient, dW += dy^T x, in blocks of 64 rows below 16 rows of x
// and a block per thread from 16 on; also a single block (10 outputs), which
// runs outside any OpenMP team (Note [One block, no team]).
TEST(Linear, WeightGradientAtEveryBatchMatchesSumsInDouble) {
  for (const int out : {10, 131}) {
    for (const int64_t n : kBatches) {
      const int64_t in = 37;
      Context ctx = Context::cpu();
      Linear fc("fc", {.out_features = out});
      testing::LayerHarness h(ctx, fc, {Shape{n, in}});
      h.randomize(static_cast<uint64_t>(n * 3 + out));
      h.forward();
      const std::vector<float> dy = h.read(h.output_grad), x = h.read(h.inputs[0]);
      std::vector<float> expected(static_cast<size_t>(out * in));
      for (int64_t o = 0; o < out; ++o) {
        for (int64_t i = 0; i < in; ++i) {
          double sum = 0.0;
          for (int64_t r = 0; r < n; ++r) {
            sum += static_cast<double>(dy[static_cast<size_t>(r * out + o)]) * x[static_cast<size_t>(r * in + i)];
          }
          expected[static_cast<size_t>(o * in + i)] = static_cast<float>(sum);
        }
      }
      h.zero_param_grads();
      h.backward();
      testing::expect_close(h.read(h.param_grads[0]), expected, 1e-5, cat("dW, batch ", n, ", ", out, " out"));
    }
  }
}

TEST(Linear, CountsParametersAndMacs) {
  Linear fc("fc6", {.out_features = 4096});
  fc.bind(std::vector<Shape>{Shape{64, 25088}});
  const auto specs = fc.param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, (Shape{4096, 25088}));
  EXPECT_EQ(specs[1].shape, (Shape{4096}));
  EXPECT_EQ(fc.macs(), int64_t{64} * 25088 * 4096);
  EXPECT_EQ(fc.describe(), "25088 -> 4096");
}

TEST(Linear, RejectsUnflattenedInput) {
  Linear fc("fc6", {.out_features = 10});
  try {
    fc.bind(std::vector<Shape>{Shape{2, 512, 7, 7}});
    FAIL() << "accepted a rank-4 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "fc6 (Linear): expects (N, features) input, got (2, 512, 7, 7); flatten it first");
  }
}

// Note [Linear over leading dims]: a rank-4 input is still an error unless
// the layer was asked to run over the last dimension; rank 1 always is.
TEST(Linear, OverLastDimAcceptsLeadingDimsButNotRankOne) {
  Linear seq("decoder", {.out_features = 10, .over_last_dim = true});
  EXPECT_EQ(seq.bind(std::vector<Shape>{Shape{35, 20, 650}}), (Shape{35, 20, 10}));
  EXPECT_EQ(seq.param_specs()[0].shape, (Shape{10, 650}));
  EXPECT_EQ(seq.param_specs()[0].fan_in, 650);
  EXPECT_EQ(seq.describe(), "650 -> 10");
  EXPECT_EQ(seq.macs(), int64_t{35} * 20 * 650 * 10);
  EXPECT_EQ(seq.bind(std::vector<Shape>{Shape{4, 650}}), (Shape{4, 10}));
  EXPECT_EQ(seq.bind(std::vector<Shape>{Shape{2, 3, 4, 650}}), (Shape{2, 3, 4, 10}));
  try {
    seq.bind(std::vector<Shape>{Shape{650}});
    FAIL() << "accepted a rank-1 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "decoder (Linear): expects (..., features) input with a batch dimension, got (650)");
  }
  Linear plain("fc", {.out_features = 10});
  try {
    plain.bind(std::vector<Shape>{Shape{650}});
    FAIL() << "accepted a rank-1 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "fc (Linear): expects (N, features) input, got (650)");
  }
}

// A (T, B, F) sequence is T*B rows: the same numbers as the (T*B, F) matrix.
TEST(Linear, OverLastDimEqualsTheFlattenedRows) {
  Context ctx = Context::cpu();
  Linear seq("seq", {.out_features = 5, .over_last_dim = true});
  Linear flat("flat", {.out_features = 5});
  testing::LayerHarness s(ctx, seq, {Shape{3, 4, 7}});
  testing::LayerHarness f(ctx, flat, {Shape{12, 7}});
  s.randomize(2);
  f.copy_values_from(s);
  s.forward();
  f.forward();
  EXPECT_EQ(s.read(s.output), f.read(f.output));
  s.backward();
  f.backward();
  EXPECT_EQ(s.read(s.input_grads[0]), f.read(f.input_grads[0]));
  EXPECT_EQ(s.read(s.param_grads[0]), f.read(f.param_grads[0]));
  EXPECT_EQ(s.read(s.param_grads[1]), f.read(f.param_grads[1]));
}

TEST(Linear, GradientsOverLeadingDims) {
  testing::check_gradients(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 5, .over_last_dim = true}); },
      {Shape{3, 2, 7}});
  testing::check_gradients(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 70, .over_last_dim = true}); },
      {Shape{2, 2, 3, 400}});  // several feature blocks, rank 4
}

TEST(Linear, RejectsNonPositiveWidth) {
  try {
    Linear("fc", {.out_features = 0});
    FAIL() << "a linear layer of width 0";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "fc (Linear): out_features must be positive, got 0");
  }
}

TEST(Linear, GradientsMatchFiniteDifferences) {
  testing::check_gradients([] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 5}); },
                           {Shape{3, 7}});
}

TEST(Linear, GradientsWithoutBias) {
  testing::check_gradients(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 4, .bias = false}); },
      {Shape{2, 6}});
}

// Wide enough that forward, dx and dw are split into several feature blocks.
TEST(Linear, GradientsAcrossFeatureBlocks) {
  testing::check_gradients(
      [] { return std::make_unique<Linear>("fc6", Linear::Options{.out_features = 150}); }, {Shape{3, 900}});
}

TEST(Linear, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 33}); }, {Shape{16, 70}});
}

// (T, B, F) on cuBLASLt: the bias epilogue must broadcast over T*B rows, the
// bias gradient sum over them.
TEST(Linear, CudaMatchesCpuOverLeadingDims) {
  testing::check_cpu_cuda_parity(
      [] { return std::make_unique<Linear>("fc", Linear::Options{.out_features = 33, .over_last_dim = true}); },
      {Shape{5, 3, 70}});
  testing::check_cpu_cuda_parity(
      [] {
        return std::make_unique<Linear>("fc", Linear::Options{.out_features = 9, .bias = false, .over_last_dim = true});
      },
      {Shape{4, 2, 6}});
}

}  // namespace
}  // namespace glassbox
