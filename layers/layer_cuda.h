// layers/layer_cuda.h: what the CUDA halves of the layers share.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "layers/layer.h"
#include "tensor/context_cuda.h"
#include "tensor/handles_cuda.h"

namespace glassbox {

// cuDNN and cuBLAS take alpha and beta by pointer: y = alpha * op(...) + beta * y.
inline constexpr float kOne = 1.0f;
inline constexpr float kZero = 0.0f;
// GradMode maps one to one onto beta: write is beta = 0, add is beta = 1.
inline const float* beta_for(GradMode mode) { return mode == GradMode::kAdd ? &kOne : &kZero; }

// dx = dy for kWrite (a device copy), dx += dy for kAdd (layers/relu.cu's
// add, in place: Note [16-bit tensor ops] in layers/add_cuda.cpp), on the
// context's stream; dy and dx of one type and element count. For gradients
// that pass straight through: Add, Flatten, Dropout at inference.
void write_or_add_tensor(Context& ctx, GradMode mode, const Tensor& dy, const Tensor& dx);

// A packed descriptor of float32 (or `dtype`: float16, bfloat16) for a shape
// of rank 1 to 4, read as NCHW and padded with trailing ones (cuDNN wants four
// dimensions): (N, F) is (N, F, 1, 1). Throws ShapeError for rank above 4 or a
// size above cuDNN's int range.
TensorDescriptor make_tensor_descriptor(const Shape& shape, DType dtype = DType::kFloat32);
// The same for a value stored in `layout`: NHWC describes a rank-4 (N, C, H,
// W) shape with channels fastest (packed_strides, tensor/tensor.h).
TensorDescriptor make_tensor_descriptor(const Shape& shape, DType dtype, Layout layout);

// ReLU as every cuDNN call here applies it (the ReLU layer, and those fused
// into a convolution or batch norm): CUDNN_PROPAGATE_NAN, so a NaN stays NaN
// whichever call runs it (Note [A ReLU keeps a NaN], layers/relu.h).
ActivationDescriptor make_relu_descriptor();
// A rank-4 view of `sizes` (N, C, H, W) with `strides` in elements, in that
// order: a slice of a larger tensor. ShapeError where a size or stride is
// beyond cuDNN's int range.
TensorDescriptor make_strided_descriptor(const Shape& sizes, const std::array<int64_t, 4>& strides, DType dtype);

// Note [Layout bridges]: a CUDA layer that computes in one layout but is
// given a value stored in the other (a convolution reading the graph's NCHW
// images and writing channels-last; max pooling reading channels-last values
// and writing NCHW for a Flatten) converts that value through its workspace
// with cudnnTransformTensor, one pass over it each way. The graph's layout plan
// keeps such values few (graph/layouts.h); `glassbox time` names them in the
// layout column. A bridge of one shape, element type and pair of layouts:
class LayoutBridge {
 public:
  LayoutBridge() = default;
  LayoutBridge(const Shape& shape, DType dtype, Layout stored, Layout computed);
  // Whether the two layouts differ and place the value's elements apart
  // (layouts_share_bytes: one channel or one pixel; else the layer reads the
  // value as it is).
  bool needed() const { return needed_; }
  // The bytes of the value in the computed layout (its workspace share), 0 where not needed.
  size_t bytes() const { return needed_ ? bytes_ : 0; }
  // computed = stored (beta 0) or computed += stored (beta 1), and back.
  void to_computed(Context& ctx, const void* stored, void* computed, const float* beta = &kZero) const;
  void to_stored(Context& ctx, const void* computed, void* stored, const float* beta = &kZero) const;

 private:
  bool needed_ = false;
  size_t bytes_ = 0;
  TensorDescriptor stored_, computed_;
};

// Rounds a workspace share up to 256 bytes, the alignment cuDNN's buffers want.
inline size_t aligned_share(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Note [16-bit parameter gradients] (layers/conv2d/conv2d_cuda.cpp): the
// scratch a 16-bit layer's library writes dW and db into before they are
// added, widened, into the fp32 gradients. One block of `dtype` (category
// kGradients): dW of shape `weight`, then, where `bias` > 0, db of `bias`
// elements from the next 256 bytes, the alignment of an allocation of its own.
struct NarrowParamGrads {
  Tensor weight, bias;  // bias undefined where `bias` is 0
};
NarrowParamGrads allocate_narrow_param_grads(Context& ctx, const Shape& weight, int64_t bias, DType dtype);

// Zeroed device buffers a prepare-time probe runs a library call on (the
// fused batch norm's, cuBLASLt's ReLU epilogue's), outside the memory plan
// and its accounting, each freed with its CudaBuffer. A buffer the device has
// no memory for is an empty CudaBuffer and `short_of_memory` names the first
// such size: the probe's answer is then "not known", not an error.
class ProbeBuffers {
 public:
  explicit ProbeBuffers(const Context& ctx);
  CudaBuffer zeroed(size_t bytes);  // at least 1 byte, 256-byte aligned (cudaMalloc)
  const std::string& short_of_memory() const { return short_of_memory_; }

 private:
  cudaStream_t stream_;
  std::string short_of_memory_;
};

// The layer's BackendState as the concrete type its x_cuda.cpp defined.
template <typename State>
State& state_as(const std::unique_ptr<BackendState>& state) {
  return static_cast<State&>(*state);
}

}  // namespace glassbox
