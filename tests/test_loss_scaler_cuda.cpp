// tests/test_loss_scaler_cuda.cpp: fp16's loss scaling on a CUDA device
// (optim/loss_scaler.h), where the state lives in device memory and the
// update kernel reads the gate itself: a forced overflow skips exactly that
// step (weights, velocity and working copy unchanged bit for bit, the scale
// halved), a clean step unscales the gradients as the CPU does, bit for bit,
// and applies as an ungated step does, a run of steps follows the CPU
// scaler's states (growth after growth_interval clean steps included), and
// restore() and state() round-trip. On the CPU: the gate is the host's
// answer, and Sgd refuses a device flag.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "optim/loss_scaler.h"
#include "optim/sgd.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tests/support/bits.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
// Not a multiple of the kernels' 256-thread blocks.
constexpr int64_t kCount = 10'007;
constexpr SgdOptions kSgd{.lr = 0.01f, .momentum = 0.9f, .weight_decay = 0.01f};

// Seeded values in (-range, range), never zero (an unscale by an infinite
// factor then gives inf, never NaN, whose bits differ between the CPU and CUDA).
std::vector<float> random_values(int64_t count, float range, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(0.01f, 1.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = (negative(engine) ? -range : range) * uniform(engine);
  return values;
}

// Gradients as backward leaves them: multiplied by the scale.
std::vector<float> scaled_gradients(float scale, uint32_t seed) {
  std::vector<float> grads = random_values(kCount, 1e-3f, seed);
  for (float& g : grads) g *= scale;
  return grads;
}

// Bitwise comparison, naming the first element that differs and how many do.
void expect_same_bits(const std::vector<float>& actual, const std::vector<float>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " elements differ, the first at " << first << ", "
                        << actual[first] << " against " << expected[first];
}

void expect_same_state(const LossScaleState& actual, const LossScaleState& expected) {
  EXPECT_EQ(std::bit_cast<uint32_t>(actual.scale), std::bit_cast<uint32_t>(expected.scale))
      << "scale " << actual.scale << " against " << expected.scale;
  EXPECT_EQ(actual.clean_steps, expected.clean_steps);
  EXPECT_EQ(actual.skipped_steps, expected.skipped_steps);
}

// Float32 masters, their gradients and a float16 working copy (the masters
// rounded), on ctx's device, with an Sgd over them.
struct Parameters {
  Tensor w, g, working;
  Sgd sgd;
  Parameters(Context& ctx, uint32_t seed)
      : w(ctx.allocate(Shape{kCount}, DType::kFloat32, MemoryCategory::kParameters)),
        g(ctx.allocate(Shape{kCount}, DType::kFloat32, MemoryCategory::kGradients)),
        working(ctx.allocate(Shape{kCount}, DType::kFloat16, MemoryCategory::kParameters)),
        sgd(ctx, w, g, kSgd, working) {
    from_vector<float>(ctx, random_values(kCount, 1.0f, seed), w);
    convert(ctx, w, working);
    ctx.synchronize();
  }
};

// An inf in the gradients skips exactly that step: the update kernel reads
// the device flag and writes nothing; the scale halves and the skip is counted.
TEST(LossScalerCuda, AForcedOverflowSkipsExactlyThatStep) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(0);
  Parameters p(gpu, 1);
  LossScaler scaler(gpu, {.initial = 1024.0f, .growth_interval = 1000});

  from_vector<float>(gpu, scaled_gradients(1024.0f, 100), p.g);  // a clean step first: the velocity is not zero
  UpdateGate gate = scaler.after_backward(gpu, p.g);
  ASSERT_NE(gate.device_flag, nullptr);
  p.sgd.step(gpu, gate.device_flag);
  EXPECT_FALSE(scaler.last_step_skipped());
  const std::vector<float> w_before = to_vector<float>(gpu, p.w);
  const std::vector<float> v_before = to_vector<float>(gpu, p.sgd.velocity());
  const std::vector<uint16_t> working_before = testing::read_16_bit(gpu, p.working);

  std::vector<float> overflowing = scaled_gradients(1024.0f, 101);
  overflowing[kCount / 3] = kInf;
  from_vector<float>(gpu, overflowing, p.g);
  gate = scaler.after_backward(gpu, p.g);
  ASSERT_NE(gate.device_flag, nullptr);
  p.sgd.step(gpu, gate.device_flag);
  EXPECT_TRUE(scaler.last_step_skipped());
  expect_same_state(scaler.state(), {.scale = 512.0f, .clean_steps = 0, .skipped_steps = 1});
  expect_same_bits(to_vector<float>(gpu, p.w), w_before, "the weights of the skipped step");
  expect_same_bits(to_vector<float>(gpu, p.sgd.velocity()), v_before, "the velocity of the skipped step");
  EXPECT_EQ(testing::read_16_bit(gpu, p.working), working_before) << "the skipped step wrote the working copy";

  from_vector<float>(gpu, scaled_gradients(512.0f, 102), p.g);  // the next step, at the halved scale, applies
  gate = scaler.after_backward(gpu, p.g);
  p.sgd.step(gpu, gate.device_flag);
  EXPECT_FALSE(scaler.last_step_skipped());
  expect_same_state(scaler.state(), {.scale = 512.0f, .clean_steps = 1, .skipped_steps = 1});
  EXPECT_NE(to_vector<float>(gpu, p.w), w_before);
}

// A clean step: the gradients come out as unscale_gradients_cpu leaves a host
// copy of them, bit for bit, at a scale whose inverse is exact (1024) and at
// one whose inverse rounds (3000); the gated update is an ungated one, bit
// for bit (the same kernel on the same numbers).
TEST(LossScalerCuda, ACleanStepUnscalesAsTheCpuAndApplies) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(0);
  for (const float scale : {1024.0f, 3000.0f}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    Parameters gated(gpu, 2), plain(gpu, 2);
    LossScaler scaler(gpu, {.initial = scale});
    const std::vector<float> grads = scaled_gradients(scale, 200);
    std::vector<float> expected = grads;
    ASSERT_FALSE(unscale_gradients_cpu(expected, scale));

    from_vector<float>(gpu, grads, gated.g);
    const UpdateGate gate = scaler.after_backward(gpu, gated.g);
    ASSERT_NE(gate.device_flag, nullptr);
    gated.sgd.step(gpu, gate.device_flag);
    from_vector<float>(gpu, expected, plain.g);
    plain.sgd.step(gpu);

    expect_same_bits(to_vector<float>(gpu, gated.g), expected, "the unscaled gradients");
    EXPECT_FALSE(scaler.last_step_skipped());
    expect_same_state(scaler.state(), {.scale = scale, .clean_steps = 1, .skipped_steps = 0});
    expect_same_bits(to_vector<float>(gpu, gated.w), to_vector<float>(gpu, plain.w), "the weights");
    expect_same_bits(to_vector<float>(gpu, gated.sgd.velocity()), to_vector<float>(gpu, plain.sgd.velocity()),
                     "the velocity");
    EXPECT_EQ(testing::read_16_bit(gpu, gated.working), testing::read_16_bit(gpu, plain.working)) << "the working copy";
  }
}

// Steps with no read of the CUDA scaler's state between them follow the CPU
// scaler on the same gradients: the unscaled gradients bit for bit, and the
// state after them, through two growths (growth_interval 3) and two skips.
TEST(LossScalerCuda, AQueuedRunFollowsTheCpuScalerThroughGrowthsAndSkips) {
  GLASSBOX_REQUIRE_CUDA();
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  const LossScaleOptions options{.initial = 1000.0f, .growth_interval = 3};
  LossScaler on_cpu(cpu, options), on_gpu(gpu, options);
  const Tensor g_cpu = cpu.allocate(Shape{kCount}, DType::kFloat32, MemoryCategory::kGradients);
  const Tensor g_gpu = gpu.allocate(Shape{kCount}, DType::kFloat32, MemoryCategory::kGradients);
  constexpr int kSteps = 9;
  const bool overflows[kSteps] = {false, false, false, true, false, false, false, false, true};
  int64_t skipped = 0;
  for (int step = 0; step < kSteps; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    std::vector<float> grads = scaled_gradients(on_cpu.state().scale, 300 + static_cast<uint32_t>(step));
    if (overflows[step]) grads[static_cast<size_t>(step)] = -kInf;
    from_vector<float>(cpu, grads, g_cpu);
    from_vector<float>(gpu, grads, g_gpu);
    const UpdateGate host_gate = on_cpu.after_backward(cpu, g_cpu);
    EXPECT_EQ(host_gate.device_flag, nullptr);
    EXPECT_EQ(host_gate.applies, !overflows[step]);
    on_gpu.after_backward(gpu, g_gpu);
    expect_same_bits(to_vector<float>(gpu, g_gpu), to_vector<float>(cpu, g_cpu), "the unscaled gradients");
    skipped += overflows[step] ? 1 : 0;
  }
  const LossScaleState expected = on_cpu.state();
  // 1000: three clean steps grow it to 2000, the skip halves it to 1000, three
  // clean steps grow it to 2000, one more clean step, and the skip halves it.
  expect_same_state(expected, {.scale = 1000.0f, .clean_steps = 0, .skipped_steps = skipped});
  expect_same_state(on_gpu.state(), expected);
  EXPECT_TRUE(on_gpu.last_step_skipped());
}

// A scale that backed off to 0 runs at FLT_TRUE_MIN: every gradient unscales
// to inf, and the step is skipped, on the device as on the CPU.
TEST(LossScalerCuda, AScaleOfZeroSkipsEveryStep) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(0);
  Parameters p(gpu, 3);
  LossScaler scaler(gpu, {});
  scaler.restore({.scale = 0.0f, .clean_steps = 4, .skipped_steps = 9});
  const std::vector<float> w_before = to_vector<float>(gpu, p.w);
  std::vector<float> expected = random_values(kCount, 1.0f, 400);
  from_vector<float>(gpu, expected, p.g);
  EXPECT_TRUE(unscale_gradients_cpu(expected, FLT_TRUE_MIN));
  p.sgd.step(gpu, scaler.after_backward(gpu, p.g).device_flag);
  EXPECT_TRUE(scaler.last_step_skipped());
  expect_same_state(scaler.state(), {.scale = 0.0f, .clean_steps = 0, .skipped_steps = 10});
  expect_same_bits(to_vector<float>(gpu, p.g), expected, "the gradients unscaled by 1 / FLT_TRUE_MIN");
  expect_same_bits(to_vector<float>(gpu, p.w), w_before, "the weights");
}

// restore() puts a checkpoint's state on the device and state() reads it
// back, subnormal scales and large counts included; the restored scale is
// the one the next step unscales by, and the last step's gate is left alone,
// as on the CPU. A bad state is refused with the CPU's message.
TEST(LossScalerCuda, RestoreThenStateRoundTrips) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(0);
  LossScaler scaler(gpu, {.initial = 1024.0f});
  expect_same_state(scaler.state(), {.scale = 1024.0f, .clean_steps = 0, .skipped_steps = 0});
  EXPECT_FALSE(scaler.last_step_skipped());
  const LossScaleState saved_states[] = {
      {.scale = 0x1p-140f, .clean_steps = 7, .skipped_steps = 3},  // subnormal
      {.scale = FLT_MAX, .clean_steps = 1999, .skipped_steps = int64_t{1} << 40},
      {.scale = 0.0f, .clean_steps = 0, .skipped_steps = 12},
      {.scale = 3000.0f, .clean_steps = 5, .skipped_steps = 1},
  };
  for (const LossScaleState& saved : saved_states) {
    SCOPED_TRACE(::testing::Message() << "scale " << saved.scale);
    scaler.restore(saved);
    expect_same_state(scaler.state(), saved);
  }

  const Tensor g = gpu.allocate(Shape{kCount}, DType::kFloat32, MemoryCategory::kGradients);
  std::vector<float> grads = scaled_gradients(3000.0f, 500);
  grads[0] = kInf;
  from_vector<float>(gpu, grads, g);
  scaler.after_backward(gpu, g);
  EXPECT_TRUE(scaler.last_step_skipped());
  scaler.restore({.scale = 3000.0f, .clean_steps = 0, .skipped_steps = 0});
  EXPECT_TRUE(scaler.last_step_skipped()) << "restore left the last step's gate as it was";
  grads[0] = 1.0f;
  std::vector<float> expected = grads;
  ASSERT_FALSE(unscale_gradients_cpu(expected, 3000.0f));
  from_vector<float>(gpu, grads, g);
  scaler.after_backward(gpu, g);
  EXPECT_FALSE(scaler.last_step_skipped());
  expect_same_bits(to_vector<float>(gpu, g), expected, "the gradients unscaled at the restored scale");

  const LossScaleState infinite{.scale = kInf, .clean_steps = 0, .skipped_steps = 0};
  EXPECT_EQ(testing::message_of<ConfigError>([&] { scaler.restore(infinite); }),
            "LossScaler: a saved state needs a finite scale >= 0 and counts >= 0, got scale inf, clean steps 0, "
            "skipped steps 0");
}

// The scaler belongs to one device: a step's context or gradients elsewhere are refused.
TEST(LossScalerCuda, RefusesAnotherDevicesContextOrGradients) {
  GLASSBOX_REQUIRE_CUDA();
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  LossScaler on_cpu(cpu, {}), on_gpu(gpu, {});
  const Tensor g_gpu = gpu.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kGradients);
  const Tensor g_cpu = cpu.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kGradients);
  EXPECT_EQ(testing::message_of<Error>([&] { on_cpu.after_backward(gpu, g_gpu); }),
            "LossScaler: made on cpu, the step's context is cuda:0");
  EXPECT_EQ(testing::message_of<Error>([&] { on_gpu.after_backward(gpu, g_cpu); }),
            cat("LossScaler: the gradients must be float32 on cuda:0, got ", g_cpu.str()));
  // A second context on the same GPU has a stream of its own, which the
  // scaler's and the optimizer's host-side writes and reads do not follow.
  Context other = Context::cuda(0);
  EXPECT_EQ(testing::message_of<Error>([&] { on_gpu.after_backward(other, g_gpu); }),
            "LossScaler: made with another context on cuda:0; use it with the context it was made with, on whose "
            "stream its state is read");
  const Tensor w = gpu.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kParameters);
  fill_zero(gpu, w);
  Sgd sgd(gpu, w, g_gpu, {});
  EXPECT_EQ(testing::message_of<Error>([&] { sgd.step(other); }),
            "Sgd: made with another context on cuda:0; step it with the context it was made with, on whose stream "
            "its rate is written");
}

// On the CPU the gate is the host's answer, and no device flag is involved.
TEST(LossScalerCpu, TheGateIsTheHostsAnswer) {
  Context cpu = Context::cpu();
  LossScaler scaler(cpu, {.initial = 1024.0f});
  const Tensor g = cpu.allocate(Shape{kCount}, DType::kFloat32, MemoryCategory::kGradients);
  from_vector<float>(cpu, scaled_gradients(1024.0f, 600), g);
  UpdateGate gate = scaler.after_backward(cpu, g);
  EXPECT_TRUE(gate.applies);
  EXPECT_EQ(gate.device_flag, nullptr);
  std::vector<float> grads = scaled_gradients(1024.0f, 601);
  grads.back() = kInf;
  from_vector<float>(cpu, grads, g);
  gate = scaler.after_backward(cpu, g);
  EXPECT_FALSE(gate.applies);
  EXPECT_EQ(gate.device_flag, nullptr);
  EXPECT_TRUE(scaler.last_step_skipped());
  expect_same_state(scaler.state(), {.scale = 512.0f, .clean_steps = 0, .skipped_steps = 1});
}

// A device flag gates only a CUDA step: the CPU's caller decides on the host.
TEST(LossScalerCpu, SgdRefusesADeviceFlagOnTheCpu) {
  Context cpu = Context::cpu();
  Parameters p(cpu, 4);
  const std::vector<float> w_before = to_vector<float>(cpu, p.w);
  const int32_t flag = 1;
  EXPECT_EQ(testing::message_of<Error>([&] { p.sgd.step(cpu, &flag); }),
            "Sgd: a device flag gates only a CUDA step; on cpu the caller decides on the host whether to step");
  expect_same_bits(to_vector<float>(cpu, p.w), w_before, "the weights");
}

}  // namespace
}  // namespace glassbox
