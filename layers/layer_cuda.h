// layers/layer_cuda.h: what the CUDA halves of the layers share.
#pragma once

#include <memory>

#include "layers/layer.h"
#include "tensor/context_cuda.h"
#include "tensor/handles_cuda.h"

namespace glassbox {

// cuDNN and cuBLAS take alpha and beta by pointer: y = alpha * op(...) + beta * y.
inline constexpr float kOne = 1.0f;
inline constexpr float kZero = 0.0f;
// GradMode maps one to one onto beta: write is beta = 0, add is beta = 1.
inline const float* beta_for(GradMode mode) { return mode == GradMode::kAdd ? &kOne : &kZero; }

// dx = dy for kWrite (a device copy), dx += dy for kAdd (cudnnAddTensor),
// on the context's stream; `desc` describes both (one shape, packed). For
// gradients that pass straight through: Add, Flatten, Dropout at inference.
void write_or_add_tensor(Context& ctx, GradMode mode, cudnnTensorDescriptor_t desc, const Tensor& dy,
                         const Tensor& dx);

// A packed descriptor of float32 (or `dtype`: float16, bfloat16) for a shape
// of rank 1 to 4, read as NCHW and padded with trailing ones (cuDNN wants four
// dimensions): (N, F) is (N, F, 1, 1). Throws ShapeError for rank above 4 or a
// size above cuDNN's int range.
TensorDescriptor make_tensor_descriptor(const Shape& shape, DType dtype = DType::kFloat32);

// The layer's BackendState as the concrete type its x_cuda.cpp defined.
template <typename State>
State& state_as(const std::unique_ptr<BackendState>& state) {
  return static_cast<State&>(*state);
}

}  // namespace glassbox
