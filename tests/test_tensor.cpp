// tests/test_tensor.cpp: shapes, tensors, allocation accounting, copies, errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <limits>
#include <stdexcept>

#include "tensor/context.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

TEST(Shape, CountsAndPrints) {
  const Shape s{8, 3, 224, 224};
  EXPECT_EQ(s.rank(), 4);
  EXPECT_EQ(s.numel(), 8 * 3 * 224 * 224);
  EXPECT_EQ(s.numel_from(0), 3 * 224 * 224);
  EXPECT_EQ(s.numel_from(3), 1);
  EXPECT_EQ(s.str(), "(8, 3, 224, 224)");
  EXPECT_EQ(Shape{}.numel(), 1);
  // An axis the shape does not have is a program's error, named, not a read past the dimensions.
  EXPECT_THROW(s.numel_from(-2), std::out_of_range);
  EXPECT_THROW(s.numel_from(4), std::out_of_range);
}

TEST(Shape, NamesTheMultiIndexOfAnElement) {
  EXPECT_EQ((Shape{4, 3}).index_str(7), "(2, 1)");
  EXPECT_EQ((Shape{4, 3}).index_str(0), "(0, 0)");
  EXPECT_EQ((Shape{2, 3, 5}).index_str(29), "(1, 2, 4)");
  EXPECT_EQ((Shape{6}).index_str(5), "(5)");
  EXPECT_THROW((Shape{4, 3}).index_str(12), std::out_of_range);
  EXPECT_THROW((Shape{4, 3}).index_str(-1), std::out_of_range);
}

TEST(Shape, RejectsZeroAndNegativeSizes) {
  try {
    Shape bad{8, 0, 224};
    FAIL() << "no error for a zero size";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "shape (8, 0, 224): dimension 1 is 0; every size must be positive");
  }
  EXPECT_THROW((Shape{-1}), ShapeError);
}

TEST(Shape, AnAxisItDoesNotHaveIsNamed) {
  const Shape s{4, 3};
  EXPECT_EQ(s[1], 3);
  for (int axis : {2, -1}) {
    try {
      (void)s[axis];
      FAIL() << "read dimension " << axis << " of a rank-2 shape";
    } catch (const std::out_of_range& e) {
      EXPECT_EQ(std::string(e.what()), cat("shape (4, 3) of rank 2 has no dimension ", axis));
    }
  }
}

TEST(Device, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  try {
    Device::parse("gpu");
    FAIL() << "no error for 'gpu'";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "device: unknown device 'gpu'; valid: cpu, cuda, cuda:N");
  }
}

TEST(Tensor, ViewsShareStorageAndCheckBounds) {
  Context ctx = Context::cpu();
  Tensor t = ctx.allocate(Shape{2, 6}, DType::kFloat32, MemoryCategory::kActivations);
  Tensor row = t.view(6 * sizeof(float), Shape{6}, DType::kFloat32);
  row.data<float>()[0] = 5.0f;
  EXPECT_EQ(t.data<float>()[6], 5.0f);
  EXPECT_EQ(t.reshaped(Shape{3, 4}).data<float>(), t.data<float>());
  EXPECT_THROW(t.reshaped(Shape{5}), ShapeError);
  EXPECT_THROW(t.view(8 * sizeof(float), Shape{6}, DType::kFloat32), Error);
  EXPECT_THROW(t.data<int>(), Error);
  EXPECT_THROW(Tensor().raw(), Error);
}

TEST(Tensor, AccessErrorsNameTheTensor) {
  try {
    Tensor().raw();
    FAIL() << "an undefined tensor gave a pointer";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "access to an undefined tensor (default-constructed, never given storage)");
  }
  try {
    Tensor().named("gradient of 'images' (none: graph inputs get no gradient)").data<float>();
    FAIL() << "an undefined tensor gave a pointer";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "access to an undefined tensor: gradient of 'images' (none: graph inputs get no gradient)");
  }
  Context ctx = Context::cpu();
  const Tensor weight = ctx.allocate(Shape{2, 3}, DType::kFloat32, MemoryCategory::kParameters).named("fc1.weight");
  EXPECT_EQ(weight.name(), "fc1.weight");
  EXPECT_EQ(weight.reshaped(Shape{6}).name(), "fc1.weight") << "the same elements keep their name";
  EXPECT_EQ(weight.view(0, Shape{3}, DType::kFloat32).name(), "") << "a part is not the whole";
  try {
    weight.data<int>();
    FAIL() << "float32 read as int32";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tensor 'fc1.weight' float32 (2, 3) on cpu accessed as int32");
  }
}

// NCHW and NHWC agree on every element's place exactly where C or H*W is 1
// (checked against the strides over every index of small shapes).
TEST(Layout, TheTwoLayoutsShareBytesExactlyWithOneChannelOrOnePixel) {
  for (int64_t n : {1, 2}) {
    for (int64_t c : {1, 3}) {
      for (int64_t h : {1, 2}) {
        for (int64_t w : {1, 3}) {
          const Shape shape{n, c, h, w};
          const auto nchw = packed_strides(shape, Layout::kNCHW), nhwc = packed_strides(shape, Layout::kNHWC);
          bool same = true;
          for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < c; ++j) {
              for (int64_t k = 0; k < h; ++k) {
                for (int64_t l = 0; l < w; ++l) {
                  same = same && i * nchw[0] + j * nchw[1] + k * nchw[2] + l * nchw[3] ==
                                     i * nhwc[0] + j * nhwc[1] + k * nhwc[2] + l * nhwc[3];
                }
              }
            }
          }
          EXPECT_EQ(layouts_share_bytes(shape), same) << shape.str();
        }
      }
    }
  }
  EXPECT_FALSE(layouts_share_bytes(Shape{1, 1, 1})) << "rank 3: NHWC describes rank 4 only";
}

TEST(Tensor, ViewErrorsNameTheShapesAndSizes) {
  Context ctx = Context::cpu();
  const Tensor t = ctx.allocate(Shape{2, 6}, DType::kFloat32, MemoryCategory::kActivations);  // 48 bytes
  try {
    t.view(8 * sizeof(float), Shape{6}, DType::kFloat32);
    FAIL() << "a view ran past the end of its buffer";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tensor float32 (6) on cpu at byte 32 does not fit its buffer of 48 bytes");
  }
  // An offset whose sum with the tensor's own would wrap around is past the end too.
  EXPECT_EQ(testing::message_of<Error>([&] { t.view(SIZE_MAX - 3, Shape{1}, DType::kFloat32); }),
            cat("a view at byte ", SIZE_MAX - 3, " of float32 (2, 6) on cpu (itself at byte 0) starts past the end "
                "of its buffer of 48 bytes"));
  const Tensor second_row = t.view(6 * sizeof(float), Shape{6}, DType::kFloat32);
  EXPECT_THROW(second_row.view(SIZE_MAX - 20, Shape{1}, DType::kFloat32), Error);
  EXPECT_THROW(second_row.view(24, Shape{1}, DType::kFloat32), Error) << "at the end: no room for one float";
  // A view whose elements would straddle its buffer's is refused: a float at byte 1 of a float buffer.
  EXPECT_EQ(testing::message_of<Error>([&] { t.view(1, Shape{4}, DType::kFloat32); }),
            "a view at byte 1 of float32 (2, 6) on cpu (itself at byte 0) does not start on a 4-byte boundary, which "
            "its float32 elements need");
  EXPECT_EQ(testing::message_of<Error>([&] { second_row.view(2, Shape{2}, DType::kFloat32); }),
            "a view at byte 2 of float32 (6) on cpu (itself at byte 24) does not start on a 4-byte boundary, which "
            "its float32 elements need");
  EXPECT_NO_THROW(t.view(2, Shape{2}, DType::kBFloat16)) << "a 16-bit view at an even byte";
  try {
    t.reshaped(Shape{5});
    FAIL() << "12 elements were viewed as 5";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "cannot view (2, 6) (12 elements) as (5) (5 elements)");
  }
}

TEST(Allocator, TracksCurrentAndPeakByCategory) {
  Context ctx = Context::cpu();
  {
    Tensor a = ctx.allocate(Shape{1024}, DType::kFloat32, MemoryCategory::kParameters);
    Tensor b = ctx.allocate(Shape{256}, DType::kFloat32, MemoryCategory::kActivations);
    const MemoryStats s = ctx.memory();
    EXPECT_EQ(s.current[static_cast<int>(MemoryCategory::kParameters)], 4096);
    EXPECT_EQ(s.current[static_cast<int>(MemoryCategory::kActivations)], 1024);
    EXPECT_EQ(s.current_total, 5120);
  }
  const MemoryStats s = ctx.memory();
  EXPECT_EQ(s.current_total, 0);
  EXPECT_EQ(s.peak_total, 5120);
  EXPECT_EQ(s.peak[static_cast<int>(MemoryCategory::kParameters)], 4096);
}

TEST(Allocator, OutOfMemoryNamesDeviceSizeAndCategory) {
  Context ctx = Context::cpu();
  try {
    ctx.allocate(Shape{int64_t{1} << 47}, DType::kFloat32, MemoryCategory::kActivations);
    FAIL() << "allocated 512 TiB";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu: out of memory allocating"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("of activations"), std::string::npos) << e.what();
  }
}

TEST(Shape, RejectsMoreElementsThanATensorMayHave) {
  try {
    Shape{int64_t{1} << 62};
    FAIL() << "a shape of 2^62 elements was accepted";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "shape (4611686018427387904) has more than 2^48 = 281474976710656 elements, the most a "
                           "tensor may have");
  }
  // The product is what counts, and it is checked before it can wrap.
  EXPECT_THROW((Shape{int64_t{1} << 32, int64_t{1} << 32}), SizeError);
  EXPECT_THROW((Shape{3, int64_t{1} << 62, int64_t{1} << 62}), SizeError);
  EXPECT_EQ((Shape{int64_t{1} << 24, int64_t{1} << 24}).numel(), kMaxElements);
}

TEST(Shape, CheckedArithmeticNamesWhatOverflowed) {
  EXPECT_EQ(checked_multiply(int64_t{1} << 31, int64_t{1} << 31, "macs"), int64_t{1} << 62);
  try {
    checked_multiply(int64_t{1} << 32, int64_t{1} << 31, "multiply-accumulates");
    FAIL() << "2^63 fitted in int64";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "multiply-accumulates: 4294967296 x 2147483648 does not fit in 64 bits");
  }
  try {
    checked_add(std::numeric_limits<int64_t>::max(), 1, "the network's parameters");
    FAIL() << "INT64_MAX + 1 fitted";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "the network's parameters: 9223372036854775807 + 1 does not fit in 64 bits");
  }
}

TEST(Context, WorkspaceGrowsOnly) {
  Context ctx = Context::cpu();
  ctx.reserve_workspace(1000);
  void* first = ctx.workspace();
  ctx.reserve_workspace(10);
  EXPECT_EQ(ctx.workspace(), first);
  EXPECT_EQ(ctx.workspace_bytes(), 1000u);
  ctx.reserve_workspace(5000);
  EXPECT_EQ(ctx.workspace_bytes(), 5000u);
}

// Note [Whole OpenMP teams] (tensor/parallel_for.h): oneDNN waits for every
// thread of the team it asked for, so a context turns OMP_DYNAMIC's
// adjustment off.
TEST(Context, TurnsOpenMpDynamicAdjustmentOff) {
  omp_set_dynamic(1);
  const Context ctx = Context::cpu();
  EXPECT_EQ(omp_get_dynamic(), 0);
}

TEST(Context, CudaWithoutAGpuSaysWhy) {
  const CudaAvailability a = cuda_availability();
  if (a.usable) GTEST_SKIP() << "a GPU is usable here; this checks the message without one";
  EXPECT_FALSE(a.reason.empty());
  EXPECT_THROW(Context::cuda(0), Error);
}

TEST(Context, CudaInACpuOnlyBuildSaysHowToBuildWithIt) {
  if (GLASSBOX_WITH_CUDA) GTEST_SKIP() << "built with CUDA: Context::cuda is there";
  try {
    Context::cuda(0);
    FAIL() << "a CPU-only build made a CUDA context";
  } catch (const NotBuiltError& e) {
    EXPECT_STREQ(e.what(), "Context::cuda: Glassbox was built without CUDA (configure with -DGLASSBOX_CUDA=ON)");
  }
}

class CopyTest : public testing::DeviceTest {};

TEST_P(CopyTest, RoundTripsThroughTheDevice) {
  Context& c = ctx();
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 4.0f, -5.5f, 6.0f};
  Tensor host = Context::cpu().allocate(Shape{2, 3}, DType::kFloat32, MemoryCategory::kData);
  Tensor dev = c.allocate(Shape{2, 3}, DType::kFloat32, MemoryCategory::kData);
  from_vector<float>(c, values, dev);
  EXPECT_EQ(to_vector<float>(c, dev), values);
  fill_zero(c, dev);
  EXPECT_EQ(to_vector<float>(c, dev), std::vector<float>(6, 0.0f));
  Tensor wrong = c.allocate(Shape{7}, DType::kFloat32, MemoryCategory::kData);
  EXPECT_THROW(copy(c, dev, wrong), ShapeError);
  (void)host;
}

GLASSBOX_INSTANTIATE_ON_DEVICES(CopyTest);

}  // namespace
}  // namespace glassbox
