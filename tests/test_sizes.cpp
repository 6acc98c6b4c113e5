// tests/test_sizes.cpp: shapes and costs too large to represent are refused
// where the graph is built, naming the layer (SizeError), so that nothing
// downstream (memory plans, MAC counts, reports) can overflow.
#include <gtest/gtest.h>

#include "graph/builder.h"

namespace glassbox {
namespace {

TEST(Sizes, AnOutputWithTooManyElementsNamesTheLayer) {
  GraphBuilder g;
  const Value x = g.input("images", {int64_t{1} << 27, 3, 224, 224});  // 2^27 * 150528 < 2^48: fits
  try {
    g.conv(x, {.out_channels = 64, .kernel = 3, .pad = 1}, "conv1");
    FAIL() << "a (2^27, 64, 224, 224) output was accepted";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "conv1 (Conv2d): shape (134217728, 64, 224, 224) has more than 2^48 = 281474976710656 "
                           "elements, the most a tensor may have");
  }
}

TEST(Sizes, MultiplyAccumulatesPast64BitsNameTheLayer) {
  // Padding makes the output plane far larger than the input: 64 x (2^21 - 1023)^2
  // outputs (just under 2^48) of a 1024x1024 window each: about 2^68 MACs.
  GraphBuilder g;
  const Value x = g.input("images", {1, 1, 1, 1});
  try {
    g.conv(x, {.out_channels = 64, .kernel = 1024, .pad = 1 << 20}, "wide");
    FAIL() << "2^68 multiply-accumulates were counted";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "wide (Conv2d): multiply-accumulates: 281200702521600 x 1048576 does not fit in 64 bits");
  }
}

TEST(Sizes, AWeightWithTooManyElementsNamesTheLayer) {
  GraphBuilder g;
  const Value x = g.input("images", {1, 1 << 20, 32, 32});
  try {
    g.conv(x, {.out_channels = 1 << 20, .kernel = 32}, "huge");
    FAIL() << "a (2^20, 2^20, 32, 32) weight was accepted";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "huge (Conv2d): shape (1048576, 1048576, 32, 32) has more than 2^48 = 281474976710656 "
                           "elements, the most a tensor may have");
  }
}

// Each layer's count fits in 64 bits; their sum does not. Two linear layers
// of 2^62 multiply-accumulates each: (2^20, 2^20) -> 2^22 -> 2^20 features.
TEST(Sizes, TheNetworksMultiplyAccumulatesPast64BitsNameTheLayer) {
  GraphBuilder g;
  const Value x = g.input("features", {1 << 20, 1 << 20});
  const Value wide = g.linear(x, {.out_features = 1 << 22}, "fc1");
  try {
    g.linear(wide, {.out_features = 1 << 20}, "fc2");
    FAIL() << "2^63 multiply-accumulates were counted";
  } catch (const SizeError& e) {
    EXPECT_STREQ(e.what(), "fc2 (Linear): the network's multiply-accumulates: 4611686018427387904 + "
                           "4611686018427387904 does not fit in 64 bits");
  }
}

}  // namespace
}  // namespace glassbox
