// tests/test_optim.cpp: the SGD update, its checks, and CUDA against CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "optim/sgd.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"
#include "tests/support/fake_device.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

class SgdTest : public testing::DeviceTest {};

TEST_P(SgdTest, FollowsMomentumAndWeightDecay) {
  Context& c = ctx();
  Tensor w = c.allocate(Shape{3}, DType::kFloat32, MemoryCategory::kParameters);
  Tensor g = c.allocate(Shape{3}, DType::kFloat32, MemoryCategory::kGradients);
  from_vector<float>(c, std::vector<float>{1.0f, -2.0f, 0.5f}, w);
  from_vector<float>(c, std::vector<float>{0.1f, 0.2f, -0.3f}, g);
  Sgd sgd(c, w, g, {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f});
  sgd.step(c);
  // v1 = g + 0.01 w;  w1 = w - 0.1 v1
  const std::vector<float> v1 = {0.1f + 0.01f, 0.2f - 0.02f, -0.3f + 0.005f};
  std::vector<float> w1 = {1.0f - 0.1f * v1[0], -2.0f - 0.1f * v1[1], 0.5f - 0.1f * v1[2]};
  std::vector<float> got = to_vector<float>(c, w);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], w1[i], 1e-6) << "after step 1, element " << i;
  sgd.step(c);
  // v2 = 0.9 v1 + g + 0.01 w1;  w2 = w1 - 0.1 v2
  const std::vector<float> g0 = {0.1f, 0.2f, -0.3f};
  got = to_vector<float>(c, w);
  for (int i = 0; i < 3; ++i) {
    const float v2 = 0.9f * v1[i] + g0[i] + 0.01f * w1[i];
    EXPECT_NEAR(got[i], w1[i] - 0.1f * v2, 1e-6) << "after step 2, element " << i;
  }
}

TEST_P(SgdTest, NesterovLooksAheadAlongTheVelocity) {
  Context& c = ctx();
  Tensor w = c.allocate(Shape{2}, DType::kFloat32, MemoryCategory::kParameters);
  Tensor g = c.allocate(Shape{2}, DType::kFloat32, MemoryCategory::kGradients);
  from_vector<float>(c, std::vector<float>{1.0f, -2.0f}, w);
  from_vector<float>(c, std::vector<float>{0.1f, 0.2f}, g);
  Sgd sgd(c, w, g, {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true});
  // torch.optim.SGD(nesterov=True): d = g + wd w; v = m v + d; w -= lr (d + m v).
  std::vector<float> ws = {1.0f, -2.0f}, vs = {0.0f, 0.0f};
  const std::vector<float> gs = {0.1f, 0.2f};
  for (int step = 1; step <= 3; ++step) {
    sgd.step(c);
    for (int i = 0; i < 2; ++i) {
      const float d = gs[i] + 0.01f * ws[i];
      vs[i] = 0.9f * vs[i] + d;
      ws[i] -= 0.1f * (d + 0.9f * vs[i]);
    }
    const std::vector<float> got = to_vector<float>(c, w);
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(got[i], ws[i], 1e-6) << "after step " << step << ", element " << i;
    const std::vector<float> velocity = to_vector<float>(c, sgd.velocity());
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(velocity[i], vs[i], 1e-6) << "velocity after step " << step;
  }
}

TEST_P(SgdTest, MatchesTheCpuOnALargeBuffer) {
  if (!ctx().device().is_cuda()) {
    GTEST_SKIP() << "compares a GPU with the CPU; on the CPU it would compare the CPU with itself";
  }
  Context cpu = Context::cpu();
  const Shape shape{100'003};  // not a multiple of any block or chunk size
  const std::vector<float> w0 = testing::random_values(shape.numel(), 1), g0 = testing::random_values(shape.numel(), 2);
  auto run = [&](Context& c) {
    Tensor w = c.allocate(shape, DType::kFloat32, MemoryCategory::kParameters);
    Tensor g = c.allocate(shape, DType::kFloat32, MemoryCategory::kGradients);
    from_vector<float>(c, g0, g);
    std::vector<float> result;
    for (const bool nesterov : {false, true}) {
      from_vector<float>(c, w0, w);
      Sgd sgd(c, w, g, {.nesterov = nesterov});
      for (int i = 0; i < 3; ++i) sgd.step(c);
      const std::vector<float> values = to_vector<float>(c, w);
      result.insert(result.end(), values.begin(), values.end());
    }
    return result;
  };
  const std::vector<float> expected = run(cpu), actual = run(ctx());
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(actual[i], expected[i], 1e-6) << "element " << i;
}

// Note [The update in one pass]: the CPU update runs in blocks of 2048 floats
// within each thread's range; over a buffer of many blocks and a ragged last
// one, with decay and momentum, plain and Nesterov, it must match the same
// formulas applied element by element.
TEST(Sgd, UpdateInBlocksMatchesTheFormulasElementByElement) {
  Context c = Context::cpu();
  const int64_t count = 100'003;
  const std::vector<float> w0 = testing::random_values(count, 3), g0 = testing::random_values(count, 4);
  for (const bool nesterov : {false, true}) {
    Tensor w = c.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kParameters);
    Tensor g = c.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kGradients);
    from_vector<float>(c, w0, w);
    from_vector<float>(c, g0, g);
    Sgd sgd(c, w, g, {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = nesterov});
    std::vector<float> ws = w0, vs(static_cast<size_t>(count), 0.0f);
    for (int step = 0; step < 2; ++step) {
      sgd.step(c);
      for (size_t i = 0; i < ws.size(); ++i) {
        const float d = g0[i] + 0.01f * ws[i];
        vs[i] = 0.9f * vs[i] + d;
        ws[i] -= 0.1f * (nesterov ? d + 0.9f * vs[i] : vs[i]);
      }
    }
    const std::vector<float> got = to_vector<float>(c, w);
    for (size_t i = 0; i < ws.size(); ++i) {
      ASSERT_NEAR(got[i], ws[i], 1e-5) << "element " << i << (nesterov ? ", Nesterov" : "");
    }
  }
}

// clip_grad_norm_'s rule: gradients of norm 5 clipped to 1 are scaled by
// 1 / (5 + 1e-6); a norm under the limit leaves them as they are. With
// lr 1, no momentum and no decay the step is w -= clipped g.
TEST_P(SgdTest, ClipsTheGradientNormBeforeTheStep) {
  Context& c = ctx();
  for (const float g_scale : {1.0f, 0.1f}) {  // norms 5 (clipped) and 0.5 (not)
    Tensor w = c.allocate(Shape{3}, DType::kFloat32, MemoryCategory::kParameters);
    Tensor g = c.allocate(Shape{3}, DType::kFloat32, MemoryCategory::kGradients);
    from_vector<float>(c, std::vector<float>{0.0f, 0.0f, 1.0f}, w);
    from_vector<float>(c, std::vector<float>{3.0f * g_scale, -4.0f * g_scale, 0.0f}, g);
    Sgd sgd(c, w, g, {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f, .max_grad_norm = 1.0f});
    EXPECT_TRUE(std::isnan(sgd.last_grad_norm(c))) << "no step yet";
    sgd.step(c);
    const float norm = 5.0f * g_scale;
    EXPECT_NEAR(sgd.last_grad_norm(c), norm, 1e-6);
    const float scale = norm > 1.0f ? 1.0f / (norm + 1e-6f) : 1.0f;
    const std::vector<float> got = to_vector<float>(c, w);
    EXPECT_NEAR(got[0], -3.0f * g_scale * scale, 1e-6) << "norm " << norm;
    EXPECT_NEAR(got[1], 4.0f * g_scale * scale, 1e-6) << "norm " << norm;
    EXPECT_EQ(got[2], 1.0f) << "a zero gradient moves nothing";
    EXPECT_EQ(to_vector<float>(c, g)[0], 3.0f * g_scale) << "clipping scales the update, not the stored gradient";
  }
}

// An infinite gradient must not be clipped to a zero update (what a scale of
// max / inf would give): the weights go NaN, so the loss shows it. The norm is
// not finite: inf on the CPU, inf or NaN from cuBLAS's nrm2 (whose
// documentation does not say which; a scaled sum gives inf / inf).
TEST_P(SgdTest, AnInfiniteGradientNormPoisonsTheStepInsteadOfSkippingIt) {
  Context& c = ctx();
  Tensor w = c.allocate(Shape{2}, DType::kFloat32, MemoryCategory::kParameters);
  Tensor g = c.allocate(Shape{2}, DType::kFloat32, MemoryCategory::kGradients);
  from_vector<float>(c, std::vector<float>{1.0f, 1.0f}, w);
  from_vector<float>(c, std::vector<float>{std::numeric_limits<float>::infinity(), 0.0f}, g);
  Sgd sgd(c, w, g, {.lr = 0.1f, .momentum = 0.0f, .weight_decay = 0.0f, .max_grad_norm = 5.0f});
  sgd.step(c);
  const float norm = sgd.last_grad_norm(c);
  if (c.is_cuda()) {
    EXPECT_FALSE(std::isfinite(norm)) << norm;
  } else {
    EXPECT_TRUE(std::isinf(norm)) << norm;
  }
  for (float v : to_vector<float>(c, w)) EXPECT_TRUE(std::isnan(v)) << v;
}

GLASSBOX_INSTANTIATE_ON_DEVICES(SgdTest);

TEST(Sgd, RejectsBadOptionsAndMismatchedBuffers) {
  Context c = Context::cpu();
  Tensor w = c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kParameters);
  Tensor g = c.allocate(Shape{5}, DType::kFloat32, MemoryCategory::kGradients);
  Tensor g4 = c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kGradients);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const struct {
    SgdOptions options;
    const char* message;
  } cases[] = {
      {{.lr = 0.0f}, "Sgd: lr must be positive and finite, got 0"},
      {{.lr = -0.1f}, "Sgd: lr must be positive and finite, got -0.1"},
      {{.lr = inf}, "Sgd: lr must be positive and finite, got inf"},
      {{.lr = nan}, "Sgd: lr must be positive and finite, got nan"},
      {{.momentum = nan}, "Sgd: momentum must be in [0, 1], got nan"},
      {{.momentum = -0.5f}, "Sgd: momentum must be in [0, 1], got -0.5"},
      {{.momentum = 1.5f}, "Sgd: momentum must be in [0, 1], got 1.5"},
      {{.weight_decay = -1e-4f}, "Sgd: weight_decay must be finite and not negative, got -0.0001"},
      {{.weight_decay = inf}, "Sgd: weight_decay must be finite and not negative, got inf"},
      {{.weight_decay = nan}, "Sgd: weight_decay must be finite and not negative, got nan"},
      {{.max_grad_norm = -1.0f}, "Sgd: max_grad_norm must be finite and not negative (0: no clipping), got -1"},
      {{.max_grad_norm = nan}, "Sgd: max_grad_norm must be finite and not negative (0: no clipping), got nan"},
      {{.max_grad_norm = inf}, "Sgd: max_grad_norm must be finite and not negative (0: no clipping), got inf"},
  };
  for (const auto& c_ : cases) {
    try {
      Sgd(c, w, g4, c_.options);
      ADD_FAILURE() << "accepted " << c_.message;
    } catch (const ConfigError& e) {
      EXPECT_STREQ(e.what(), c_.message);
    }
  }
  Sgd sgd(c, w, g4, {});
  try {
    sgd.set_lr(inf);
    FAIL() << "set_lr accepted inf";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "Sgd: lr must be 0 or more and finite, got inf");
  }
  EXPECT_EQ(sgd.options().lr, SgdOptions{}.lr) << "a refused lr must not be kept";
  sgd.set_lr(0.0f);  // where a schedule decays to
  EXPECT_EQ(sgd.options().lr, 0.0f);
  try {
    Sgd(c, w, g, {});
    FAIL() << "accepted gradients of another shape";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "Sgd: parameters float32 (4) on cpu and gradients float32 (5) on cpu must be float32 of one shape");
  }
  // A graph's buffers before compile, and one buffer given as both.
  EXPECT_EQ(testing::message_of<ConfigError>([&] { Sgd(c, Tensor(), w, {}); }),
            "Sgd: the parameters tensor has no storage; a graph's parameters() and gradients() have storage once it "
            "is compiled");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { Sgd(c, w, Tensor(), {}); }),
            "Sgd: the gradients tensor has no storage; a graph's parameters() and gradients() have storage once it "
            "is compiled");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { Sgd(c, w, w, {}); }),
            "Sgd: the parameters float32 (4) on cpu and the gradients float32 (4) on cpu share memory; give the "
            "gradients a buffer of their own");
}

TEST(Sgd, StepRefusesParametersOnAnotherDevice) {
  Context cpu = Context::cpu();
  const Tensor w = testing::tensor_claiming(Device::cuda(0), Shape{4});
  const Tensor g = testing::tensor_claiming(Device::cuda(0), Shape{4});
  Sgd sgd(cpu, w, g, {});
  try {
    sgd.step(cpu);
    FAIL() << "stepped cuda:0 parameters with a CPU context";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Sgd: parameters are on cuda:0, the context is cpu");
  }
}

}  // namespace
}  // namespace glassbox
