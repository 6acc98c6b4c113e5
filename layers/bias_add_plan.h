// layers/bias_add_plan.h: a bias add on the GPU, each value of y plus its
// channel's bias, then max(0, .) where the layer's ReLU is fused, in place on
// a convolution's or a Linear's output by Glassbox's kernel
// (launch_bias_add, layers/relu_kernels_cuda.h). Pure functions, built and
// tested without a GPU (tests/test_bias_add_plan.cpp).
//
// Note [A bias add by Glassbox's kernel]: cuDNN's broadcast add,
// cudnnAddTensor, is deprecated in cuDNN 9 and its documentation names no
// bfloat16 (Note [16-bit tensor ops], layers/add_cuda.cpp). A kernel of
// Glassbox's also applies the ReLU in the same pass where cuDNN's fused call
// is refused (Note [When cuDNN refuses the fused call]): one pass over y
// instead of two calls. The sum is in float and rounded once, as cuDNN's
// float add is, so float32 results are the same bits.
//
// y is (images, channels, pixels) channels-first (NCHW: pixels H*W; a
// Linear's (N, O) is (N, O, 1)) or (images, pixels, channels) channels-last
// (NHWC). Value i's channel is (i / run) % channels, where run is the pixels
// channels-first and 1 channels-last.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace glassbox {

struct BiasAddPlan {
  int64_t count = 0;     // values of y
  int64_t channels = 0;  // values of the bias
  int64_t run = 1;       // consecutive values of y that share a channel
  int64_t pack = 1;      // values per 16 bytes: 4 float32, 8 float16 or bfloat16
  bool operator==(const BiasAddPlan&) const = default;
};

// Value i's channel, as the kernel takes it one value at a time (the tail
// under a pack, and a y that does not align to packs).
#ifdef __CUDACC__
__host__ __device__
#endif
inline int64_t bias_channel_of(int64_t i, int64_t run, int64_t channels) { return (i / run) % channels; }

// Where value i is: its channel and its place in its run. The packed kernel
// finds a pack's first value's once, then steps value by value, with no
// division per value (tests/test_bias_add_plan.cpp: equal to bias_channel_of
// at every value).
struct BiasCursor {
  int64_t channel = 0, place = 0;
};
#ifdef __CUDACC__
__host__ __device__
#endif
inline BiasCursor bias_cursor_at(int64_t i, int64_t run, int64_t channels) {
  return {bias_channel_of(i, run, channels), i % run};
}
#ifdef __CUDACC__
__host__ __device__
#endif
inline void step_bias_cursor(BiasCursor& cursor, int64_t run, int64_t channels) {
  if (++cursor.place < run) return;
  cursor.place = 0;
  if (++cursor.channel == channels) cursor.channel = 0;
}

// The plan for y of `images` x `channels` x `pixels` values stored in
// `layout`, for values of `value_bytes` bytes (4 or 2). Every size at least
// 1; ShapeError otherwise.
BiasAddPlan plan_bias_add(int64_t images, int64_t channels, int64_t pixels, Layout layout, int64_t value_bytes);

}  // namespace glassbox
