// tests/test_sgd_working_copy.cpp: the 16-bit working copy that Sgd writes in
// the update's pass (mixed precision): the float32 master weights come out as
// a step without a copy makes them, every element of the copy is the master
// rounded to the copy's type, the constructor leaves the copy alone, a copy of
// another type, size or device is refused, and CUDA writes what the CPU does.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "optim/sgd.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tests/support/bits.h"
#include "tests/support/devices.h"
#include "tests/support/fake_device.h"

namespace glassbox {

// How gtest prints a DType parameter: "bfloat16", "float16". In namespace
// glassbox for argument-dependent lookup; static, as only this file uses it.
static void PrintTo(DType dtype, std::ostream* out) { *out << name_of(dtype); }

namespace {

// Not a multiple of any vector width or of the update's 2048-float blocks;
// over six of parallel_for's 32768-element grains, so the step is split over
// the threads. The small count runs on one thread, in one ragged block.
constexpr int64_t kLargeCount = 200'003;
constexpr int64_t kSmallCount = 37;
constexpr int kSteps = 4;
// A stretch of zero weights with zero gradients, as the alignment gaps
// between a graph's parameters are: the copy must be written there too.
constexpr int64_t kGapBegin = 20'000, kGapEnd = 20'013;
constexpr uint16_t kPattern = 0xA5A5;  // a bfloat16 and a float16 NaN: no step writes it

// `count` values from a fixed-seed std::mt19937, uniform in [-1, 1); `wide`
// multiplies each by a power of two in 2^-30 .. 2^20, which reaches the
// float16 subnormals, the values below them and the values past its largest
// finite 65504 (they round to inf).
std::vector<float> random_floats(int64_t count, uint32_t seed, bool wide) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = wide ? std::ldexp(uniform(rng), exponent(rng)) : uniform(rng);
  return values;
}

void fill_bits(Context& ctx, const Tensor& tensor, uint16_t value) {
  Context cpu = Context::cpu();
  const Tensor host = cpu.allocate(tensor.shape(), tensor.dtype(), MemoryCategory::kParameters);
  auto* bits = static_cast<uint16_t*>(host.raw());
  for (int64_t i = 0; i < host.numel(); ++i) bits[i] = value;
  copy(ctx, host, tensor);
  ctx.synchronize();
}

struct Result {
  std::vector<float> master;
  std::vector<uint16_t> working;  // empty without a copy
  float grad_norm = 0.0f;
};

// kSteps steps from the same weights and per-step gradients, with a working
// copy of type `working` (pre-filled with kPattern) or without one.
Result run(Context& ctx, int64_t count, const SgdOptions& options, std::optional<DType> working, bool wide) {
  std::vector<float> w0 = random_floats(count, 1, wide);
  std::vector<std::vector<float>> grads;
  for (int step = 0; step < kSteps; ++step) {
    grads.push_back(random_floats(count, 100 + static_cast<uint32_t>(step), false));
    if (count > kGapEnd) std::fill(grads.back().begin() + kGapBegin, grads.back().begin() + kGapEnd, 0.0f);
  }
  if (count > kGapEnd) std::fill(w0.begin() + kGapBegin, w0.begin() + kGapEnd, 0.0f);
  const Tensor w = ctx.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kParameters);
  const Tensor g = ctx.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kGradients);
  Tensor copy16;
  if (working) {
    copy16 = ctx.allocate(Shape{count}, *working, MemoryCategory::kParameters);
    fill_bits(ctx, copy16, kPattern);
  }
  from_vector<float>(ctx, w0, w);
  Sgd sgd(ctx, w, g, options, copy16);
  for (const std::vector<float>& step_grads : grads) {
    from_vector<float>(ctx, step_grads, g);
    sgd.step(ctx);
  }
  Result result{.master = to_vector<float>(ctx, w), .grad_norm = sgd.last_grad_norm(ctx)};
  if (working) result.working = testing::read_16_bit(ctx, copy16);
  return result;
}

// Momentum and weight decay always; Nesterov on and off, clipping on and off.
std::vector<SgdOptions> option_sets() {
  std::vector<SgdOptions> sets;
  for (const bool nesterov : {false, true}) {
    for (const float max_grad_norm : {0.0f, 1.0f}) {
      sets.push_back({.lr = 0.01f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = nesterov,
                      .max_grad_norm = max_grad_norm});
    }
  }
  return sets;
}

std::string describe(const SgdOptions& options, int64_t count) {
  return std::string(options.nesterov ? "Nesterov" : "classical momentum") +
         (options.max_grad_norm > 0.0f ? ", clipped" : ", not clipped") + ", " + std::to_string(count) + " elements";
}

class SgdWorkingCopy : public ::testing::TestWithParam<DType> {};

// The copy changes nothing in the float32 update (the same bits as a step
// without one), and each step leaves every element of it, the zero stretch
// included, equal to the master rounded to nearest even (to_16_bit).
TEST_P(SgdWorkingCopy, MasterAsWithoutACopyAndEveryElementTheMasterRounded) {
  const DType dtype = GetParam();
  Context c = Context::cpu();
  for (const int64_t count : {kSmallCount, kLargeCount}) {
    for (const SgdOptions& options : option_sets()) {
      SCOPED_TRACE(describe(options, count));
      const Result plain = run(c, count, options, std::nullopt, true);
      const Result mixed = run(c, count, options, dtype, true);
      if (options.max_grad_norm > 0.0f) {
        EXPECT_GT(mixed.grad_norm, options.max_grad_norm) << "the gradients must be clipped for this case to test it";
      }
      ASSERT_EQ(mixed.master.size(), plain.master.size());
      ASSERT_EQ(mixed.working.size(), plain.master.size());
      for (size_t i = 0; i < plain.master.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(mixed.master[i]), std::bit_cast<uint32_t>(plain.master[i]))
            << "master element " << i << ": " << mixed.master[i] << " with the copy, " << plain.master[i]
            << " without";
        ASSERT_EQ(mixed.working[i], to_16_bit(mixed.master[i], dtype))
            << "copy element " << i << " of master " << mixed.master[i];
      }
      if (count > kGapEnd) {
        for (int64_t i = kGapBegin; i < kGapEnd; ++i) {
          EXPECT_EQ(mixed.working[static_cast<size_t>(i)], 0) << "zero stretch, element " << i;
        }
      }
    }
  }
}

// The graph fills the copy when it initialises or loads the parameters; the
// optimizer's constructor must not overwrite it.
TEST_P(SgdWorkingCopy, TheConstructorDoesNotWriteTheCopy) {
  const DType dtype = GetParam();
  Context c = Context::cpu();
  const int64_t count = 1'000;
  const Tensor w = c.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kParameters);
  const Tensor g = c.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kGradients);
  const Tensor copy16 = c.allocate(Shape{count}, dtype, MemoryCategory::kParameters);
  from_vector<float>(c, random_floats(count, 7, false), w);
  from_vector<float>(c, random_floats(count, 8, false), g);
  fill_bits(c, copy16, kPattern);
  const Sgd sgd(c, w, g, {}, copy16);
  EXPECT_EQ(sgd.working().raw(), copy16.raw());
  EXPECT_EQ(sgd.working().dtype(), dtype);
  const std::vector<uint16_t> bits = testing::read_16_bit(c, copy16);
  for (size_t i = 0; i < bits.size(); ++i) ASSERT_EQ(bits[i], kPattern) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Types, SgdWorkingCopy, ::testing::Values(DType::kBFloat16, DType::kFloat16),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(name_of(info.param)); });

TEST(SgdWorkingCopyOptions, WithoutACopyThereIsNone) {
  Context c = Context::cpu();
  const Tensor w = c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kParameters);
  const Tensor g = c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kGradients);
  const Sgd sgd(c, w, g, {});
  EXPECT_FALSE(sgd.working().defined());
}

TEST(SgdWorkingCopyOptions, RejectsACopyOfAnotherTypeSizeOrDevice) {
  Context c = Context::cpu();
  const Tensor w = c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kParameters);
  const Tensor g = c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kGradients);
  const struct {
    Tensor working;
    const char* message;
  } cases[] = {
      {c.allocate(Shape{4}, DType::kFloat32, MemoryCategory::kParameters),
       "Sgd: the 16-bit working copy float32 (4) on cpu of the parameters float32 (4) on cpu must be float16 or "
       "bfloat16 with the parameters' 4 elements, on their device"},
      {c.allocate(Shape{4}, DType::kInt32, MemoryCategory::kParameters),
       "Sgd: the 16-bit working copy int32 (4) on cpu of the parameters float32 (4) on cpu must be float16 or "
       "bfloat16 with the parameters' 4 elements, on their device"},
      {c.allocate(Shape{5}, DType::kBFloat16, MemoryCategory::kParameters),
       "Sgd: the 16-bit working copy bfloat16 (5) on cpu of the parameters float32 (4) on cpu must be float16 or "
       "bfloat16 with the parameters' 4 elements, on their device"},
      {c.allocate(Shape{3}, DType::kFloat16, MemoryCategory::kParameters),
       "Sgd: the 16-bit working copy float16 (3) on cpu of the parameters float32 (4) on cpu must be float16 or "
       "bfloat16 with the parameters' 4 elements, on their device"},
      {testing::tensor_claiming(Device::cuda(0), Shape{4}, DType::kBFloat16),
       "Sgd: the 16-bit working copy bfloat16 (4) on cuda:0 of the parameters float32 (4) on cpu must be float16 or "
       "bfloat16 with the parameters' 4 elements, on their device"},
  };
  for (const auto& case_ : cases) {
    EXPECT_THROW(
        {
          try {
            Sgd(c, w, g, {}, case_.working);
          } catch (const ShapeError& e) {
            EXPECT_STREQ(e.what(), case_.message);
            throw;
          }
        },
        ShapeError)
        << "accepted " << case_.working.str();
  }
  // The same element count in another shape is a flat copy of the parameters.
  const Tensor reshaped = c.allocate(Shape{2, 2}, DType::kBFloat16, MemoryCategory::kParameters);
  EXPECT_NO_THROW(Sgd(c, w, g, {}, reshaped));
}

// CUDA against the CPU, as tests/test_optim.cpp's SgdTest.MatchesTheCpuOnALargeBuffer:
// the masters within 1e-6 (the kernel and Eigen may contract multiplies and
// adds into FMAs differently, and cuBLAS's norm is not the CPU's), and the
// CUDA copy exactly the CUDA master rounded as the CPU rounds (to_16_bit).
// Where the masters agree to the bit, so do the copies.
TEST(SgdWorkingCopyOptions, CudaWritesTheCopyAsTheCpu) {
  GLASSBOX_REQUIRE_CUDA();
  Context cpu = Context::cpu(), gpu = Context::cuda(0);
  for (const DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    for (const SgdOptions& options : option_sets()) {
      SCOPED_TRACE(std::string(name_of(dtype)) + ", " + describe(options, kLargeCount));
      const Result expected = run(cpu, kLargeCount, options, dtype, false);
      const Result actual = run(gpu, kLargeCount, options, dtype, false);
      ASSERT_EQ(actual.working.size(), expected.working.size());
      for (size_t i = 0; i < expected.master.size(); ++i) {
        ASSERT_NEAR(actual.master[i], expected.master[i], 1e-6) << "master element " << i;
        ASSERT_EQ(actual.working[i], to_16_bit(actual.master[i], dtype))
            << "copy element " << i << " of master " << actual.master[i];
        if (actual.master[i] == expected.master[i]) {
          ASSERT_EQ(actual.working[i], expected.working[i]) << "copy element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace glassbox
