// tests/test_lstm.cpp: the LSTM layer: a forward worked by hand, gradients
// (one and two layers, no bias, with dropout between layers), dropout's
// scaling, the packed parameter layout in a graph, bad options and shapes,
// and CPU-vs-CUDA parity. Its state (h0, c0, carried or not):
// tests/test_lstm_state.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "layers/lstm/lstm.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_lstm(Lstm::Options options) { return std::make_unique<Lstm>("lstm", options); }

TEST(Lstm, ForwardMatchesAHandComputation) {
  // One layer, I = 1, H = 2, T = 2, B = 1; parameters laid out as PyTorch's:
  // rows 0-1 gate i, 2-3 f, 4-5 g, 6-7 o, one row per hidden unit.
  Context ctx = Context::cpu();
  Lstm lstm("lstm", {.hidden = 2});
  testing::LayerHarness h(ctx, lstm, {Shape{2, 1, 1}});
  const std::vector<float> x = {0.5f, -1.0f};
  const std::vector<float> w_ih = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f};            // (8, 1)
  const std::vector<float> w_hh = {0.2f, -0.1f, 0.0f, 0.3f, -0.4f, 0.5f, 0.1f, 0.1f,              // (8, 2)
                                   0.6f, -0.3f, 0.2f, 0.2f, -0.7f, 0.4f, 0.3f, -0.5f};
  const std::vector<float> b_ih = {0.05f, 0.1f, -0.1f, 0.2f, 0.0f, -0.3f, 0.15f, 0.25f};
  const std::vector<float> b_hh = {-0.05f, 0.2f, 0.3f, -0.1f, 0.1f, 0.05f, -0.2f, 0.0f};
  h.write(h.inputs[0], x);
  h.write(h.params[0], w_ih);
  h.write(h.params[1], w_hh);
  h.write(h.params[2], b_ih);
  h.write(h.params[3], b_hh);
  h.forward();

  // By hand, unit j of gate k reads row 2k + j.
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  double hidden[2] = {0.0, 0.0}, cell[2] = {0.0, 0.0};
  std::vector<float> expected;
  for (int t = 0; t < 2; ++t) {
    double next_h[2], next_c[2];
    for (int j = 0; j < 2; ++j) {
      double a[4];
      for (int k = 0; k < 4; ++k) {
        const int r = 2 * k + j;
        a[k] = w_ih[r] * x[t] + b_ih[r] + b_hh[r] + w_hh[2 * r] * hidden[0] + w_hh[2 * r + 1] * hidden[1];
      }
      const double i = sigmoid(a[0]), f = sigmoid(a[1]), g = std::tanh(a[2]), o = sigmoid(a[3]);
      next_c[j] = f * cell[j] + i * g;
      next_h[j] = o * std::tanh(next_c[j]);
    }
    for (int j = 0; j < 2; ++j) {
      hidden[j] = next_h[j];
      cell[j] = next_c[j];
      expected.push_back(static_cast<float>(hidden[j]));
    }
  }
  testing::expect_close(h.read(h.output), expected, 1e-6, "y");
  testing::expect_close(h.read(lstm.final_hidden()), {expected[2], expected[3]}, 1e-6, "final h");
  testing::expect_close(h.read(lstm.final_cell()), {static_cast<float>(cell[0]), static_cast<float>(cell[1])}, 1e-6,
                        "final c");
}

TEST(Lstm, CountsParametersAndMacs) {
  Lstm lstm("lstm", {.hidden = 4, .layers = 2, .dropout = 0.25f});
  lstm.bind(std::vector<Shape>{Shape{5, 2, 3}});
  EXPECT_EQ(lstm.output_shape(), (Shape{5, 2, 4}));
  const auto specs = lstm.param_specs();
  ASSERT_EQ(specs.size(), 8u);
  const char* names[] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"};
  const Shape shapes[] = {Shape{16, 3}, Shape{16, 4}, Shape{16}, Shape{16},
                          Shape{16, 4}, Shape{16, 4}, Shape{16}, Shape{16}};
  for (size_t k = 0; k < specs.size(); ++k) {
    EXPECT_EQ(specs[k].name, names[k]);
    EXPECT_EQ(specs[k].shape, shapes[k]) << names[k];
    EXPECT_EQ(specs[k].init, Init::kFanInUniform) << names[k];
    EXPECT_EQ(specs[k].fan_in, 4) << names[k] << ": nn.LSTM's U(-1/sqrt(H), 1/sqrt(H))";
  }
  EXPECT_EQ(lstm.macs(), 5 * 2 * (16 * (3 + 4) + 16 * (4 + 4)));
  EXPECT_EQ(lstm.flops(Pass::kForward), 2 * lstm.macs());
  EXPECT_EQ(lstm.describe(), "3 -> 4, 2 layers, dropout 0.25");
  Lstm plain("lstm", {.hidden = 8, .bias = false, .carry_state = true});
  plain.bind(std::vector<Shape>{Shape{5, 2, 3}});
  EXPECT_EQ(plain.param_specs().size(), 2u);
  EXPECT_EQ(plain.describe(), "3 -> 8, no bias, carried state");
}

TEST(Lstm, GradientsOneLayer) { testing::check_gradients([] { return make_lstm({.hidden = 4}); }, {Shape{3, 2, 3}}); }

TEST(Lstm, GradientsTwoLayers) {
  testing::check_gradients([] { return make_lstm({.hidden = 4, .layers = 2}); }, {Shape{3, 2, 3}});
}

TEST(Lstm, GradientsWithoutBias) {
  testing::check_gradients([] { return make_lstm({.hidden = 4, .bias = false}); }, {Shape{3, 2, 3}});
}

// The gradient check reseeds the RNG before every forward: the same masks each time.
TEST(Lstm, GradientsWithDropoutBetweenLayers) {
  testing::check_gradients([] { return make_lstm({.hidden = 4, .layers = 2, .dropout = 0.3f}); }, {Shape{3, 2, 3}});
}

// Wide enough that the products split into several blocks of rows, and (with
// two or more threads) each step into blocks of units.
TEST(Lstm, GradientsAcrossBlocks) {
  testing::check_gradients([] { return make_lstm({.hidden = 70}); }, {Shape{2, 2, 5}}, {.max_elements = 24});
}

// The recurrent step, with W_hh past 2 MiB (H = 384: 2.25 MiB): where built
// with oneDNN, on oneDNN's matmul (Note [The recurrent step on oneDNN's
// matmul] in layers/lstm/lstm_steps_onednn.h); without it, streamed at up to 16
// sequences (Note [The recurrent step streamed] in layers/lstm/lstm_cpu.cpp: 5
// is a group of 8 rows and none full, 16 two full groups) and Eigen's
// product at 20. The forward against the LSTM's equations in double, and the
// gradients.
TEST(Lstm, RecurrentStepMatchesTheEquationsInDouble) {
  for (const int64_t batch : {5, 16, 20}) {
    const int64_t T = 3, I = 7, H = 384, G = 4 * H;
    Context ctx = Context::cpu();
    Lstm lstm("lstm", {.hidden = static_cast<int>(H)});
    testing::LayerHarness h(ctx, lstm, {Shape{T, batch, I}});
    EXPECT_EQ(lstm.algorithms().find("recurrent products in forward on oneDNN matmul") != std::string::npos,
              GLASSBOX_WITH_ONEDNN != 0)
        << lstm.algorithms();
    h.randomize(static_cast<uint64_t>(batch));
    const std::vector<float> x = h.read(h.inputs[0]), w_ih = h.read(h.params[0]), w_hh = h.read(h.params[1]);
    const std::vector<float> b_ih = h.read(h.params[2]), b_hh = h.read(h.params[3]);
    h.forward();
    auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    std::vector<double> hidden(static_cast<size_t>(batch * H)), cell(hidden.size()), a(static_cast<size_t>(G));
    std::vector<float> expected;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> next_h(hidden.size());
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t r = 0; r < G; ++r) {
          double sum = static_cast<double>(b_ih[static_cast<size_t>(r)]) + b_hh[static_cast<size_t>(r)];
          for (int64_t i = 0; i < I; ++i) {
            sum += static_cast<double>(w_ih[static_cast<size_t>(r * I + i)]) * x[static_cast<size_t>((t * batch + b) * I + i)];
          }
          for (int64_t j = 0; j < H; ++j) {
            sum += static_cast<double>(w_hh[static_cast<size_t>(r * H + j)]) * hidden[static_cast<size_t>(b * H + j)];
          }
          a[static_cast<size_t>(r)] = sum;
        }
        for (int64_t j = 0; j < H; ++j) {
          const auto at = [&](int64_t gate) { return a[static_cast<size_t>(gate * H + j)]; };
          double& c = cell[static_cast<size_t>(b * H + j)];
          c = sigmoid(at(1)) * c + sigmoid(at(0)) * std::tanh(at(2));
          next_h[static_cast<size_t>(b * H + j)] = sigmoid(at(3)) * std::tanh(c);
        }
      }
      hidden = next_h;
      for (const double v : hidden) expected.push_back(static_cast<float>(v));
    }
    testing::expect_close(h.read(h.output), expected, 1e-5, cat("y at batch ", batch));
  }
  testing::check_gradients([] { return make_lstm({.hidden = 384}); }, {Shape{2, 3, 4}}, {.max_elements = 16});
}

// Dropout is off in inference (deterministic, as p = 0) and on in training.
TEST(Lstm, DropoutOnlyInTraining) {
  Context ctx = Context::cpu();
  Lstm dropping("lstm", {.hidden = 6, .layers = 2, .dropout = 0.5f});
  Lstm plain("lstm", {.hidden = 6, .layers = 2});
  testing::LayerHarness d(ctx, dropping, {Shape{4, 3, 5}});
  testing::LayerHarness p(ctx, plain, {Shape{4, 3, 5}});
  d.randomize(8);
  p.copy_values_from(d);
  p.forward(Phase::kInference);
  d.forward(Phase::kInference);
  const std::vector<float> inference = d.read(d.output);
  EXPECT_EQ(inference, p.read(p.output));
  d.forward(Phase::kInference);
  EXPECT_EQ(d.read(d.output), inference);
  p.forward(Phase::kTraining);
  EXPECT_EQ(p.read(p.output), inference) << "p = 0: training computes what inference does";
  d.forward(Phase::kTraining);
  EXPECT_NE(d.read(d.output), inference);
}

// Layer 1 made nearly the identity times eps (i and o saturated open, f
// closed, g = tanh(eps x), no recurrence), so y / eps shows its input: layer
// 0's output through the mask. Each element is then dropped or scaled by
// 1 / (1 - p), and about 1 - p of them are kept (sd 0.005 for 10000 draws).
TEST(Lstm, DropoutKeepsAboutOneMinusPAndScalesByItsInverse) {
  constexpr int64_t H = 50;
  constexpr float p = 0.4f, eps = 0.01f;
  Context ctx = Context::cpu();
  Lstm lstm("lstm", {.hidden = H, .layers = 2, .dropout = p});
  testing::LayerHarness h(ctx, lstm, {Shape{4, 50, 3}});
  h.randomize(9);
  std::vector<float> w_ih(4 * H * H, 0.0f), b_ih(4 * H, 0.0f);
  for (int64_t j = 0; j < H; ++j) {
    w_ih[static_cast<size_t>((2 * H + j) * H + j)] = eps;  // g_j = tanh(eps * x_j)
    b_ih[static_cast<size_t>(j)] = 30.0f;                  // i = 1
    b_ih[static_cast<size_t>(H + j)] = -30.0f;             // f = 0
    b_ih[static_cast<size_t>(3 * H + j)] = 30.0f;          // o = 1
  }
  h.write(h.params[4], w_ih);
  h.write(h.params[5], std::vector<float>(4 * H * H, 0.0f));
  h.write(h.params[6], b_ih);
  h.write(h.params[7], std::vector<float>(4 * H, 0.0f));
  h.forward(Phase::kInference);
  const std::vector<float> kept_all = h.read(h.output);
  h.forward(Phase::kTraining);
  const std::vector<float> dropped = h.read(h.output);
  size_t kept = 0, bad = 0, counted = 0;
  for (size_t k = 0; k < dropped.size(); ++k) {
    if (std::fabs(kept_all[k]) < 1e-5f) continue;  // too small a ratio to read
    ++counted;
    const float ratio = dropped[k] / kept_all[k];
    if (std::fabs(ratio) < 1e-3f) continue;
    ++kept;
    if (!(std::fabs(ratio - 1.0f / (1.0f - p)) <= 1e-3f)) ++bad;  // a NaN output is bad, not kept
  }
  ASSERT_GT(counted, 9000u);
  EXPECT_EQ(bad, 0u) << "kept elements not scaled by 1 / (1 - p)";
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(counted), 1.0 - p, 0.02);
}

// Note [Dropout mask bits], as layers/lstm/lstm_cpu.cpp applies it: replica
// r of R (Context::replica) at batch B draws, for sequences [r x B, (r + 1) x
// B) of every step, the masks one process at R x B draws, so data-parallel
// training takes one process's steps. The sequences do not interact, so each
// replica's output is the whole one's columns (to rounding: another batch
// may take another GEMM path); a mask that differs changes them by far more.
TEST(Lstm, DataParallelReplicasDrawTheDropoutMasksOfOneProcess) {
  constexpr int64_t T = 3, B = 2, I = 4;
  const Lstm::Options options{.hidden = 5, .layers = 2, .dropout = 0.5f};
  for (const int replicas : {2, 3}) {
    Context whole_ctx = Context::cpu(11);
    Lstm whole_lstm("lstm", options);
    testing::LayerHarness whole(whole_ctx, whole_lstm, {Shape{T, replicas * B, I}});
    whole.randomize(3);
    whole.forward();
    const std::vector<float> x = whole.read(whole.inputs[0]), y = whole.read(whole.output);
    for (int r = 0; r < replicas; ++r) {
      Context ctx = Context::cpu(11);
      ctx.set_replica({.index = r, .count = replicas});
      Lstm lstm("lstm", options);
      testing::LayerHarness h(ctx, lstm, {Shape{T, B, I}});
      for (size_t p = 0; p < h.params.size(); ++p) h.write(h.params[p], whole.read(whole.params[p]));
      // Rows t of (T, R x B, F) -> this replica's columns of each step.
      auto columns = [&](const std::vector<float>& all, int64_t features) {
        std::vector<float> mine;
        for (int64_t t = 0; t < T; ++t) {
          const auto from = all.begin() + (t * replicas * B + r * B) * features;
          mine.insert(mine.end(), from, from + B * features);
        }
        return mine;
      };
      h.write(h.inputs[0], columns(x, I));
      h.forward();
      testing::expect_close(h.read(h.output), columns(y, options.hidden), 1e-5,
                            cat("replica ", r, " of ", replicas));
    }
  }
}

// The graph lays an LSTM's parameters (and gradients) back to back, one
// 256-byte aligned block, while the linear layer's stay aligned one by one.
TEST(Lstm, GraphPacksItsParameters) {
  GraphBuilder g;
  Value x = g.input("tokens", {3, 2, 3});
  x = g.append(make_lstm({.hidden = 4}), {x});
  x = g.linear(g.flatten(x), {.out_features = 5}, "fc");
  Graph graph = std::move(g).build(g.softmax_cross_entropy(x, g.input("labels", {3}, DType::kInt32)));
  Context ctx = Context::cpu();
  graph.compile(ctx);
  const auto* base = static_cast<const std::byte*>(graph.parameters().raw());
  const auto* grads = static_cast<const std::byte*>(graph.gradients().raw());
  auto offset = [](const Tensor& t, const std::byte* from) { return static_cast<const std::byte*>(t.raw()) - from; };
  const Node& lstm = graph.node("lstm");
  ASSERT_EQ(lstm.params.size(), 4u);
  EXPECT_EQ(offset(lstm.params[0], base) % 256, 0);
  ptrdiff_t expected = offset(lstm.params[0], base);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(offset(lstm.params[k], base), expected) << lstm.layer->param_specs()[k].name;
    EXPECT_EQ(offset(lstm.param_grads[k], grads), expected) << lstm.layer->param_specs()[k].name << " gradient";
    expected += static_cast<ptrdiff_t>(lstm.params[k].bytes());
  }
  const size_t lstm_bytes = (48 + 64 + 16 + 16) * 4;  // 576: the block, one alignment pad after it
  const size_t fc_weight = 5 * 8 * 4, fc_bias = 5 * 4;  // flatten: (3, 2 * 4)
  const Node& fc = graph.node("fc");
  EXPECT_EQ(offset(fc.params[0], base) % kParameterAlignment, 0u);
  EXPECT_EQ(offset(fc.params[1], base) % kParameterAlignment, 0u);
  EXPECT_EQ(graph.parameters().bytes(),
            parameter_aligned(lstm_bytes) + parameter_aligned(fc_weight) + parameter_aligned(fc_bias));
}

TEST(Lstm, RejectsBadOptions) {
  const std::pair<Lstm::Options, const char*> cases[] = {
      {{.hidden = 0}, "lstm1 (LSTM): hidden must be positive, got 0"},
      {{.hidden = 4, .layers = 0}, "lstm1 (LSTM): layers must be from 1 to 1024, got 0"},
      {{.hidden = 4, .layers = 1 << 30}, "lstm1 (LSTM): layers must be from 1 to 1024, got 1073741824"},
      {{.hidden = 4, .dropout = 1.0f}, "lstm1 (LSTM): dropout must be in [0, 1), got 1"},
      {{.hidden = 4, .dropout = -0.5f}, "lstm1 (LSTM): dropout must be in [0, 1), got -0.5"},
      {{.hidden = 4, .dropout = std::nanf("")}, "lstm1 (LSTM): dropout must be in [0, 1), got nan"},
  };
  for (const auto& [options, message] : cases) {
    try {
      Lstm lstm("lstm1", options);
      ADD_FAILURE() << "accepted " << message;
    } catch (const ConfigError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

TEST(Lstm, RejectsInputsThatAreNotSequences) {
  Lstm lstm("lstm1", {.hidden = 4});
  try {
    lstm.bind(std::vector<Shape>{Shape{6, 3}});
    FAIL() << "accepted a rank-2 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "lstm1 (LSTM): input 0 must be (T, B, features), time-major, got shape (6, 3)");
  }
}

TEST(Lstm, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity([] { return make_lstm({.hidden = 6, .layers = 2}); }, {Shape{5, 3, 7}});
}

// Inference (dropout off) on both backends, forward only: after an inference
// forward cuDNN keeps nothing for a backward.
TEST(Lstm, CudaMatchesCpuInInference) {
  GLASSBOX_REQUIRE_CUDA();
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  Lstm on_cpu("lstm", {.hidden = 6, .layers = 2, .dropout = 0.5f});
  Lstm on_gpu("lstm", {.hidden = 6, .layers = 2, .dropout = 0.5f});
  testing::LayerHarness c(cpu, on_cpu, {Shape{5, 3, 7}});
  testing::LayerHarness g(gpu, on_gpu, {Shape{5, 3, 7}});
  c.randomize(3);
  g.copy_values_from(c);
  g.poison(g.output);
  c.forward(Phase::kInference);
  g.forward(Phase::kInference);
  testing::expect_close(g.read(g.output), c.read(c.output), 1e-4, "inference y");
}
}  // namespace
}  // namespace glassbox
