// tests/test_lstm_state.cpp: the LSTM layer's state: gradients from a
// non-zero (h0, c0), the carried state (forward 2 continues from forward 1's
// end, in the same buffers; a given state starts the next forward;
// reset_state starts over, on the CPU and against CUDA), no carry
// without carry_state, and the state calls' errors.
#include <gtest/gtest.h>

#include <cstddef>

#include "layers/lstm/lstm.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_lstm(Lstm::Options options) { return std::make_unique<Lstm>("lstm", options); }

// A state tensor (L,B,H) on ctx, filled from a seed.
Tensor random_state(Context& ctx, const Shape& shape, uint64_t seed) {
  Tensor t = ctx.allocate(shape, DType::kFloat32, MemoryCategory::kData);
  from_vector<float>(ctx, testing::random_values(shape.numel(), seed), t);
  return t;
}

// Every forward starts from the given (h0, c0): backward through a non-zero start.
TEST(Lstm, GradientsFromANonZeroInitialState) {
  testing::check_gradients([] { return make_lstm({.hidden = 4, .layers = 2}); }, {Shape{3, 2, 3}},
                           {.fill = [](testing::LayerHarness& h) {
                             auto& lstm = dynamic_cast<Lstm&>(h.layer);
                             lstm.set_initial_state(h.ctx, random_state(h.ctx, Shape{2, 2, 4}, 41),
                                                    random_state(h.ctx, Shape{2, 2, 4}, 42));
                           }});
}

// Forward 2 of a carrying layer equals a fresh forward started from forward
// 1's final state, outputs and gradients alike; reset_state starts over.
TEST(Lstm, CarriedStateContinuesFromTheLastFinalState) {
  Context ctx = Context::cpu();
  const Shape x_shape{3, 2, 3};
  Lstm carrying("lstm", {.hidden = 4, .layers = 2, .carry_state = true});
  testing::LayerHarness a(ctx, carrying, {x_shape});
  a.randomize(5);
  const std::vector<float> x1 = a.read(a.inputs[0]), x2 = testing::random_values(x_shape.numel(), 77);
  const void* h0_buffer = carrying.initial_hidden().raw();
  const void* c0_buffer = carrying.initial_cell().raw();
  a.forward();
  const std::vector<float> y1 = a.read(a.output);
  const std::vector<float> h1 = a.read(carrying.final_hidden()), c1 = a.read(carrying.final_cell());
  EXPECT_NE(h1, std::vector<float>(h1.size(), 0.0f));
  a.write(a.inputs[0], x2);
  a.forward();
  a.backward();
  EXPECT_EQ(a.read(carrying.initial_hidden()), h1);
  EXPECT_EQ(a.read(carrying.initial_cell()), c1);
  // Carried by a copy, into the buffers a replayed CUDA graph was captured
  // with (Note [The carried state is copied]).
  EXPECT_EQ(carrying.initial_hidden().raw(), h0_buffer);
  EXPECT_EQ(carrying.initial_cell().raw(), c0_buffer);

  Lstm fresh("lstm", {.hidden = 4, .layers = 2});
  testing::LayerHarness b(ctx, fresh, {x_shape});
  b.copy_values_from(a);  // x2, the parameters, dy
  Tensor h = ctx.allocate(Shape{2, 2, 4}, DType::kFloat32, MemoryCategory::kData);
  Tensor c = ctx.allocate(Shape{2, 2, 4}, DType::kFloat32, MemoryCategory::kData);
  b.write(h, h1);
  b.write(c, c1);
  fresh.set_initial_state(ctx, h, c);
  b.forward();
  b.backward();
  testing::expect_close(b.read(b.output), a.read(a.output), 1e-6, "y of forward 2 against a fresh start");
  testing::expect_close(b.read(b.input_grads[0]), a.read(a.input_grads[0]), 1e-6, "dx");
  for (size_t k = 0; k < a.params.size(); ++k) {
    testing::expect_close(b.read(b.param_grads[k]), a.read(a.param_grads[k]), 1e-6, fresh.param_specs()[k].name);
  }

  carrying.reset_state(ctx);
  a.write(a.inputs[0], x1);
  a.forward();
  EXPECT_EQ(a.read(a.output), y1) << "after reset_state, from zeros again";
}

// A given state is where the next forward of a carrying layer starts; the
// one after continues from that forward's end.
TEST(Lstm, ACarryingLayerStartsFromAGivenState) {
  Context ctx = Context::cpu();
  Lstm lstm("lstm", {.hidden = 4, .layers = 2, .carry_state = true});
  testing::LayerHarness h(ctx, lstm, {Shape{3, 2, 3}});
  h.randomize(8);
  h.forward();
  const Tensor given_h = random_state(ctx, Shape{2, 2, 4}, 43), given_c = random_state(ctx, Shape{2, 2, 4}, 44);
  lstm.set_initial_state(ctx, given_h, given_c);
  h.forward();
  EXPECT_EQ(h.read(lstm.initial_hidden()), h.read(given_h));
  EXPECT_EQ(h.read(lstm.initial_cell()), h.read(given_c));
  const std::vector<float> end_h = h.read(lstm.final_hidden());
  h.forward();
  EXPECT_EQ(h.read(lstm.initial_hidden()), end_h);
}

TEST(Lstm, WithoutCarriedStateEveryForwardStartsFromZeros) {
  Context ctx = Context::cpu();
  Lstm lstm("lstm", {.hidden = 4});
  testing::LayerHarness h(ctx, lstm, {Shape{3, 2, 3}});
  h.randomize(6);
  h.forward();
  const std::vector<float> first = h.read(h.output);
  h.forward();
  EXPECT_EQ(h.read(h.output), first);
  EXPECT_EQ(h.read(lstm.initial_hidden()), std::vector<float>(8, 0.0f));
}

TEST(Lstm, StateCallsNeedAPreparedLayerAndTheStateShape) {
  Context ctx = Context::cpu();
  Lstm lstm("lstm1", {.hidden = 4, .layers = 2});
  try {
    lstm.reset_state(ctx);
    FAIL() << "reset_state before prepare";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "lstm1 (LSTM): reset_state before prepare: the state does not exist yet");
  }
  testing::LayerHarness h(ctx, lstm, {Shape{3, 5, 2}});
  const Tensor good = random_state(ctx, Shape{2, 5, 4}, 1), bad = random_state(ctx, Shape{1, 5, 4}, 2);
  try {
    lstm.set_initial_state(ctx, good, bad);
    FAIL() << "accepted a (1, 5, 4) cell state";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "lstm1 (LSTM): initial state c must be (layers, batch, hidden) (2, 5, 4), got (1, 5, 4)");
  }
}

// The carried state on both backends: forward 2 starts from forward 1's end
// (cuDNN's hx, cx), and backward reads that start.
TEST(Lstm, CudaCarriesTheStateAsTheCpuDoes) {
  GLASSBOX_REQUIRE_CUDA();
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  Lstm on_cpu("lstm", {.hidden = 6, .layers = 2, .carry_state = true});
  Lstm on_gpu("lstm", {.hidden = 6, .layers = 2, .carry_state = true});
  testing::LayerHarness c(cpu, on_cpu, {Shape{4, 3, 5}});
  testing::LayerHarness g(gpu, on_gpu, {Shape{4, 3, 5}});
  c.randomize(4);
  g.copy_values_from(c);
  c.forward();
  g.forward();
  const std::vector<float> x2 = testing::random_values(4 * 3 * 5, 12);
  c.write(c.inputs[0], x2);
  g.write(g.inputs[0], x2);
  c.forward();
  g.forward();
  testing::expect_close(g.read(g.output), c.read(c.output), 1e-4, "y of forward 2");
  testing::expect_close(g.read(on_gpu.final_hidden()), c.read(on_cpu.final_hidden()), 1e-4, "final h");
  testing::expect_close(g.read(on_gpu.final_cell()), c.read(on_cpu.final_cell()), 1e-4, "final c");
  c.backward();
  g.backward();
  testing::expect_close(g.read(g.input_grads[0]), c.read(c.input_grads[0]), 1e-4, "dx");
  for (size_t k = 0; k < c.params.size(); ++k) {
    testing::expect_close(g.read(g.param_grads[k]), c.read(c.param_grads[k]), 1e-4, on_cpu.param_specs()[k].name);
  }
}

}  // namespace
}  // namespace glassbox
