// tests/test_copy.cpp: what copy(), fill_zero(), to_vector() and from_vector()
// refuse: sizes and types that differ, and a tensor on another device than the
// context (tensor/copy.h); and fill_zero over the threads. Round trips are in
// test_tensor.cpp (CopyTest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "tensor/copy.h"
#include "tests/support/data_files.h"
#include "tests/support/fake_device.h"

namespace glassbox {
namespace {

Tensor host_tensor(Context& ctx, Shape shape, DType dtype = DType::kFloat32) {
  return ctx.allocate(std::move(shape), dtype, MemoryCategory::kData);
}

// fill_zero on the CPU runs over the threads in chunks of bytes: a tensor of
// many chunks and a ragged last one, every byte of it zeroed (NaN before).
TEST(Copy, FillZeroClearsEveryChunkOfALargeTensor) {
  Context ctx = Context::cpu();
  const int64_t count = 1'000'003;  // 4 MB: many chunks, the last one short
  Tensor t = ctx.allocate(Shape{count}, DType::kFloat32, MemoryCategory::kData);
  from_vector<float>(ctx, std::vector<float>(static_cast<size_t>(count), std::nanf("")), t);
  fill_zero(ctx, t);
  const std::vector<float> values = to_vector<float>(ctx, t);
  const auto nonzero = std::find_if(values.begin(), values.end(), [](float v) { return v != 0.0f; });
  EXPECT_EQ(nonzero, values.end()) << "element " << (nonzero - values.begin()) << " is not zero";
}

TEST(Copy, RefusesADestinationOfAnotherSizeOrType) {
  Context ctx = Context::cpu();
  const Tensor src = host_tensor(ctx, Shape{2, 3});
  from_vector<float>(ctx, std::vector<float>{1, 2, 3, 4, 5, 6}, src);
  const Tensor larger = host_tensor(ctx, Shape{7});
  try {
    copy(ctx, src, larger);
    FAIL() << "copied 6 elements into 7";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "copy: source float32 (2, 3) on cpu does not match destination float32 (7) on cpu");
  }
  try {
    copy(ctx, src, host_tensor(ctx, Shape{6}, DType::kInt32));
    FAIL() << "copied float32 into int32";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "copy: source float32 (2, 3) on cpu does not match destination int32 (6) on cpu");
  }
  const Tensor same = host_tensor(ctx, Shape{6});
  copy(ctx, src, same);  // the element count and type are what must agree, not the shape
  EXPECT_EQ(to_vector<float>(ctx, same), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Views of one buffer that overlap are refused; a tensor onto itself changes nothing.
  const Tensor first = src.view(0, Shape{4}, DType::kFloat32), later = src.view(2 * sizeof(float), Shape{4},
                                                                                 DType::kFloat32);
  EXPECT_EQ(testing::message_of<Error>([&] { copy(ctx, first, later); }),
            "copy: source float32 (4) on cpu and destination float32 (4) on cpu overlap in one buffer; copy through "
            "a tensor of its own");
  copy(ctx, src, src);
  copy(ctx, src.view(0, Shape{2}, DType::kFloat32), src.view(4 * sizeof(float), Shape{2}, DType::kFloat32));
  EXPECT_EQ(to_vector<float>(ctx, src), (std::vector<float>{1, 2, 3, 4, 1, 2})) << "views apart copy";
}

TEST(Copy, FromVectorNeedsOneValuePerElement) {
  Context ctx = Context::cpu();
  const Tensor t = host_tensor(ctx, Shape{2, 3});
  try {
    from_vector<float>(ctx, std::vector<float>{1, 2, 3, 4, 5}, t);
    FAIL() << "5 values filled 6 elements";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "from_vector: 5 values for float32 (2, 3) on cpu");
  }
}

TEST(Copy, RefusesATensorOnAnotherDevice) {
  Context ctx = Context::cpu();
  const Tensor on_gpu = testing::tensor_claiming(Device::cuda(0), Shape{2, 3});
  const Tensor host = host_tensor(ctx, Shape{2, 3});
  const char* tail = ": tensor float32 (2, 3) on cuda:0, the context is cpu";
  for (const auto& [what, call] : std::vector<std::pair<const char*, std::function<void()>>>{
           {"copy", [&] { copy(ctx, on_gpu, host); }},
           {"copy", [&] { copy(ctx, host, on_gpu); }},
           {"fill_zero", [&] { fill_zero(ctx, on_gpu); }},
           {"to_vector", [&] { to_vector<float>(ctx, on_gpu); }},
           {"from_vector", [&] { from_vector<float>(ctx, std::vector<float>(6, 1.0f), on_gpu); }},
       }) {
    try {
      call();
      ADD_FAILURE() << what << " reached a cuda:0 tensor through a CPU context";
    } catch (const Error& e) {
      EXPECT_EQ(e.what(), what + std::string(tail));
    }
  }
}

}  // namespace
}  // namespace glassbox
