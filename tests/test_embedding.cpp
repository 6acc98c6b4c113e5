// tests/test_embedding.cpp
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "graph/builder.h"
#include "layers/embedding.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

void set_tokens(testing::LayerHarness& h, const std::vector<int>& tokens) {
  from_vector<int>(h.ctx, tokens, h.inputs[0]);
}

// Tokens (p * 5 + 3) % V: in range, every token used, and repeated once the
// positions outnumber the vocabulary.
void spread_tokens(testing::LayerHarness& h) {
  const auto& layer = static_cast<const Embedding&>(h.layer);
  std::vector<int> tokens(static_cast<size_t>(h.inputs[0].numel()));
  for (size_t p = 0; p < tokens.size(); ++p) tokens[p] = static_cast<int>((p * 5 + 3) % layer.options().vocabulary);
  set_tokens(h, tokens);
}

std::function<std::unique_ptr<Layer>()> make_embedding(int vocabulary, int dim) {
  return [=] { return std::make_unique<Embedding>("embed", Embedding::Options{.vocabulary = vocabulary, .dim = dim}); };
}

TEST(Embedding, ForwardGathersRowsAndBackwardAddsThemBack) {
  Context ctx = Context::cpu();
  Embedding embed("embed", {.vocabulary = 4, .dim = 2});
  testing::LayerHarness h(ctx, embed, {Shape{2, 2}});  // (T, B)
  EXPECT_EQ(embed.output_shape(), (Shape{2, 2, 2}));
  h.write(h.params[0], {0.0f, 0.5f,   // token 0
                        1.0f, 1.5f,   // token 1
                        2.0f, 2.5f,   // token 2
                        3.0f, 3.5f}); // token 3
  set_tokens(h, {3, 0, 3, 1});
  h.poison(h.output);
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{3.0f, 3.5f, 0.0f, 0.5f, 3.0f, 3.5f, 1.0f, 1.5f}));
  // Token 3 appears twice: its row gets both positions' gradients, added onto
  // what the gradient held; token 2 appears nowhere and keeps its value.
  h.write(h.output_grad, {1.0f, 2.0f, 10.0f, 20.0f, 100.0f, 200.0f, 1000.0f, 2000.0f});
  h.write(h.param_grads[0], {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f});
  h.backward();
  EXPECT_EQ(h.read(h.param_grads[0]), (std::vector<float>{10.25f, 20.25f, 1000.25f, 2000.25f, 0.25f, 0.25f,
                                                          101.25f, 202.25f}));
  EXPECT_FALSE(h.input_grads[0].defined()) << "int tokens get no gradient";
}

TEST(Embedding, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_embedding(7, 6), {Shape{5, 3}}, {.fill = spread_tokens});
  // Rank-1 tokens, and more columns than one CPU block (64).
  testing::check_gradients(make_embedding(3, 150), {Shape{8}}, {.fill = spread_tokens});
}

// The CPU scatter-add splits columns over the threads and adds the positions
// in order within each: the same bits with 1, 2 or 3 threads, and the bits of
// a plain serial loop.
TEST(Embedding, WeightGradientHasTheSameBitsForAnyThreadCount) {
  const int vocabulary = 13, dim = 200;
  const Shape tokens_shape{40, 8};  // 320 positions x 200 columns: enough to go parallel
  std::vector<float> reference;
  {
    Context ctx = Context::cpu();
    Embedding embed("embed", {.vocabulary = vocabulary, .dim = dim});
    testing::LayerHarness h(ctx, embed, {tokens_shape});
    h.randomize(3);
    spread_tokens(h);
    const std::vector<int> tokens = to_vector<int>(ctx, h.inputs[0]);
    const std::vector<float> dy = h.read(h.output_grad);
    reference.assign(static_cast<size_t>(vocabulary) * dim, 0.0f);
    for (size_t p = 0; p < tokens.size(); ++p) {
      for (int c = 0; c < dim; ++c) reference[static_cast<size_t>(tokens[p]) * dim + c] += dy[p * dim + c];
    }
  }
  const int threads = omp_get_max_threads();
  for (int count : {1, 2, 3}) {
    omp_set_num_threads(count);
    Context ctx = Context::cpu();
    Embedding embed("embed", {.vocabulary = vocabulary, .dim = dim});
    testing::LayerHarness h(ctx, embed, {tokens_shape});
    h.randomize(3);
    spread_tokens(h);
    h.forward();
    h.backward();
    EXPECT_EQ(h.read(h.param_grads[0]), reference) << count << " thread(s)";
  }
  omp_set_num_threads(threads);
}

TEST(Embedding, RejectsATokenOutsideTheVocabularyNamingItsPosition) {
  Context ctx = Context::cpu();
  Embedding embed("encoder", {.vocabulary = 10, .dim = 4});
  testing::LayerHarness h(ctx, embed, {Shape{3, 2}});
  h.randomize(1);
  const std::pair<std::vector<int>, const char*> cases[] = {
      {{0, 1, 2, 9, 10, 3}, "encoder (Embedding): the token at position (2, 0) is 10, outside [0, 10)"},
      {{0, -1, 2, 3, 4, 5}, "encoder (Embedding): the token at position (0, 1) is -1, outside [0, 10)"},
  };
  for (const auto& [tokens, message] : cases) {
    set_tokens(h, tokens);
    try {
      h.forward();
      ADD_FAILURE() << "forward accepted " << message;
    } catch (const DataError& e) {  // the data's fault
      EXPECT_STREQ(e.what(), message);
    }
    try {  // backward indexes the gradient table by token: it checks again
      h.backward();
      ADD_FAILURE() << "backward accepted " << message;
    } catch (const DataError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

TEST(Embedding, RejectsBadOptions) {
  const std::pair<Embedding::Options, const char*> cases[] = {
      {{.vocabulary = 0, .dim = 4}, "embed (Embedding): vocabulary must be positive, got 0"},
      {{.vocabulary = 10, .dim = -2}, "embed (Embedding): dim must be positive, got -2"},
      {{.vocabulary = 10, .dim = 4, .init_range = 0.0f},
       "embed (Embedding): init_range must be positive and finite, got 0"},
      {{.vocabulary = 10, .dim = 4, .init_range = NAN},
       "embed (Embedding): init_range must be positive and finite, got nan"},
  };
  for (const auto& [options, message] : cases) {
    try {
      Embedding("embed", options);
      ADD_FAILURE() << "accepted " << message;
    } catch (const ConfigError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

TEST(Embedding, RejectsScalarTokens) {
  Embedding embed("embed", {.vocabulary = 10, .dim = 4});
  try {
    embed.bind(std::vector<Shape>{Shape{}});
    FAIL() << "accepted a rank-0 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "embed (Embedding): expects int32 tokens of rank 1 or more ((T, B) for a sequence), got shape ()");
  }
}

TEST(Embedding, ShapesParametersAndCosts) {
  Embedding embed("embed", {.vocabulary = 10000, .dim = 650});
  embed.bind(std::vector<Shape>{Shape{35, 20}});
  EXPECT_EQ(embed.output_shape(), (Shape{35, 20, 650}));
  EXPECT_EQ(embed.input_dtype(0), DType::kInt32);
  EXPECT_EQ(embed.describe(), "10000 x 650");
  const std::vector<ParamSpec> specs = embed.param_specs();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].name, "weight");  // nn.Embedding's name and layout
  EXPECT_EQ(specs[0].shape, (Shape{10000, 650}));
  EXPECT_EQ(specs[0].init, Init::kUniform);
  EXPECT_EQ(specs[0].bound, 0.1f);
  EXPECT_EQ(embed.macs(), 0);
  EXPECT_EQ(embed.flops(Pass::kForward), 0);
  // 700 positions: their tokens, 700 rows of the table read, 700 rows written.
  const int64_t row = 650 * 4, tokens = 700 * 4;
  EXPECT_EQ(embed.bytes_moved(Pass::kForward), tokens + 700 * row + 700 * row);
  EXPECT_EQ(embed.bytes_moved(Pass::kBackward), 700 * row + tokens + 2 * 700 * row);
  EXPECT_EQ(embed.bytes_moved(Pass::kBackwardData), 0);
  // More positions than tokens: at most the whole table is read.
  Embedding small("small", {.vocabulary = 5, .dim = 8});
  small.bind(std::vector<Shape>{Shape{100}});
  EXPECT_EQ(small.bytes_moved(Pass::kForward), 100 * 4 + 5 * 32 + 100 * 32);
}

// The builder's method, the whole way: int tokens (T, B) -> embedding ->
// linear over the last dimension -> loss over (T, B) targets, on the CPU,
// with the table initialised in U(-0.1, 0.1).
TEST(Embedding, BuildsAndTrainsInAGraph) {
  GraphBuilder g;
  const Value tokens = g.input("tokens", {4, 3}, DType::kInt32);
  const Value targets = g.input("targets", {4, 3}, DType::kInt32);
  const Value x = g.embedding(tokens, {.vocabulary = 11, .dim = 8});
  const Value logits = g.linear(x, {.out_features = 11, .over_last_dim = true}, "decoder");
  Graph graph = std::move(g).build(g.softmax_cross_entropy(logits, targets));
  EXPECT_EQ(graph.node("embed1").shape, (Shape{4, 3, 8}));
  Context ctx = Context::cpu();
  graph.compile(ctx, {.seed = 5});
  const std::vector<float> table = to_vector<float>(ctx, graph.node("embed1").params[0]);
  ASSERT_EQ(table.size(), 88u);
  for (float w : table) EXPECT_LE(std::fabs(w), 0.1f);
  from_vector<int>(ctx, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1}, graph.input("tokens"));
  from_vector<int>(ctx, std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1, 2}, graph.input("targets"));
  graph.zero_grad(ctx);
  graph.forward(ctx);
  EXPECT_NEAR(graph.loss(ctx), std::log(11.0), 0.2) << "small initial weights: near-uniform predictions";
  graph.backward(ctx);
  const std::vector<float> grad = to_vector<float>(ctx, graph.node("embed1").param_grads[0]);
  double norm = 0.0;
  for (float v : grad) norm += std::fabs(v);
  EXPECT_GT(norm, 0.0);
}

TEST(Embedding, BuilderRefusesFloatTokens) {
  GraphBuilder g;
  const Value x = g.input("tokens", {4, 3});
  try {
    g.embedding(x, {.vocabulary = 11, .dim = 8}, "encoder");
    FAIL() << "float tokens reached an embedding";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "encoder (Embedding): input 0 ('tokens') is float32, expected int32");
  }
}

TEST(Embedding, CudaMatchesCpu) {
  // The atomic scatter-add adds in a varying order: equal within rounding.
  testing::check_cpu_cuda_parity(make_embedding(50, 33), {Shape{35, 4}}, {.tolerance = 1e-5, .fill = spread_tokens});
  testing::check_cpu_cuda_parity(make_embedding(7, 300), {Shape{64}}, {.tolerance = 1e-5, .fill = spread_tokens});
}

// With PrepareOptions::deterministic the ordered kernel adds as the CPU does:
// the same bits, every run.
TEST(Embedding, CudaDeterministicGradientHasTheCpuBits) {
  GLASSBOX_REQUIRE_CUDA();
  const Shape shape{35, 20};
  Context cpu = Context::cpu();
  Embedding cpu_embed("embed", {.vocabulary = 97, .dim = 130});
  testing::LayerHarness c(cpu, cpu_embed, {shape});
  c.randomize(4);
  spread_tokens(c);
  c.forward();
  c.backward();
  const std::vector<float> expected = c.read(c.param_grads[0]);
  Context gpu = Context::cuda(0);
  Embedding gpu_embed("embed", {.vocabulary = 97, .dim = 130});
  testing::LayerHarness g(gpu, gpu_embed, {shape});
  gpu_embed.prepare(gpu, {.deterministic = true});
  g.copy_values_from(c);
  for (int run = 0; run < 2; ++run) {
    g.zero_param_grads();
    g.forward();
    g.backward();
    EXPECT_EQ(g.read(g.param_grads[0]), expected) << "run " << run;
  }
}

// The kernels cannot throw: a bad token makes its output row NaN and adds nothing.
TEST(Embedding, CudaBadTokenGivesANaNRow) {
  GLASSBOX_REQUIRE_CUDA();
  for (const bool deterministic : {false, true}) {
    Context ctx = Context::cuda(0);
    Embedding embed("embed", {.vocabulary = 4, .dim = 3});
    testing::LayerHarness h(ctx, embed, {Shape{3}});
    embed.prepare(ctx, {.deterministic = deterministic});
    h.randomize(1);
    set_tokens(h, {1, 4, -1});
    h.forward();
    const std::vector<float> y = h.read(h.output);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(std::isnan(y[i]), i >= 3) << i;
    h.zero_param_grads();
    h.backward();
    const std::vector<float> dy = h.read(h.output_grad), dweight = h.read(h.param_grads[0]);
    for (size_t i = 0; i < dweight.size(); ++i) {
      EXPECT_EQ(dweight[i], i >= 3 && i < 6 ? dy[i - 3] : 0.0f) << i << (deterministic ? ", ordered" : ", atomic");
    }
  }
}

}  // namespace
}  // namespace glassbox
