// layers/relu_kernels_cuda.h: ReLU's backward kernel (layers/relu.cu),
// launched on `stream` and checked after launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace glassbox {

// dx = dy where y > 0, else 0 (dx += that where `add`), over `count` values
// of `values` type (float32, float16 or bfloat16; all three tensors), in
// float arithmetic. Each of y and dy is read once, dx written once (read too
// where `add`): Note [ReLU backward from y] in layers/relu_cuda.cpp.
void launch_relu_backward(const void* y, const void* dy, void* dx, int64_t count, DType values, bool add,
                          cudaStream_t stream);

}  // namespace glassbox
