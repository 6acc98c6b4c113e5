// layers/relu_kernels_cuda.h: the element-wise kernels of layers/relu.cu,
// launched on `stream` and checked after launch: ReLU's backward, a
// residual add with and without its ReLU fused, and a layer's bias add.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "layers/bias_add_plan.h"
#include "tensor/dtype.h"

namespace glassbox {

// dx = dy where y > 0, else 0 (dx += that where `add`), over `count` values
// of `values` type (float32, float16 or bfloat16; all three tensors), in
// float arithmetic. Each of y and dy is read once, dx written once (read too
// where `add`): Note [ReLU backward from y] in layers/relu_cuda.cpp.
void launch_relu_backward(const void* y, const void* dy, void* dx, int64_t count, DType values, bool add,
                          cudaStream_t stream);

// y = max(0, a + b), NaN for a NaN sum (Note [A ReLU keeps a NaN],
// layers/relu.h), over `count` values of `values` type, the sum in
// float and rounded once: Note [A ReLU fused into its producer]
// (graph/fusion.h) for Add (layers/add_cuda.cpp).
void launch_add_relu(const void* a, const void* b, void* y, int64_t count, DType values, cudaStream_t stream);

// y = a + b over `count` values of `values` type, the sum in float and
// rounded once, a NaN propagating; y may be a or b (in place). Every
// same-shape add of a GPU layer: Note [16-bit tensor ops], layers/add_cuda.cpp.
void launch_add(const void* a, const void* b, void* y, int64_t count, DType values, cudaStream_t stream);

// y += bias[channel] in place, then y = max(0, y) where `relu` (a NaN sum
// stays NaN), over y as `plan` lays it out (plan_bias_add), y and the bias of
// `values` type, the sum in float and rounded once: Note [A bias add by
// Glassbox's kernel] (layers/bias_add_plan.h). Error where the plan was made
// for values of another size.
void launch_bias_add(void* y, const void* bias, const BiasAddPlan& plan, DType values, bool relu,
                     cudaStream_t stream);

}  // namespace glassbox
