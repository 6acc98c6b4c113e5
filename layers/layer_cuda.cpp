// layers/layer_cuda.cpp: descriptors from shapes, gradients passed through.
#include "layers/layer_cuda.h"

#include <algorithm>
#include <climits>

#include "layers/relu_kernels_cuda.h"

namespace glassbox {

TensorDescriptor make_tensor_descriptor(const Shape& shape, DType dtype) {
  if (shape.rank() < 1 || shape.rank() > 4) {
    throw ShapeError(cat("cuDNN tensor descriptor: rank ", shape.rank(), " shape ", shape.str(),
                         " (1 to 4 supported)"));
  }
  int dims[4] = {1, 1, 1, 1};
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] > INT_MAX) throw ShapeError(cat("cuDNN tensor descriptor: ", shape.str(), " too large"));
    dims[i] = static_cast<int>(shape[i]);
  }
  return make_nchw_descriptor(dims[0], dims[1], dims[2], dims[3], dtype);
}

ActivationDescriptor make_relu_descriptor() {
  ActivationDescriptor relu = make_descriptor<ActivationDescriptor>(cudnnCreateActivationDescriptor);
  CUDNN_CHECK(cudnnSetActivationDescriptor(relu.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  return relu;
}

TensorDescriptor make_tensor_descriptor(const Shape& shape, DType dtype, Layout layout) {
  if (layout == Layout::kNCHW) return make_tensor_descriptor(shape, dtype);
  return make_strided_descriptor(shape, packed_strides(shape, layout), dtype);
}

TensorDescriptor make_strided_descriptor(const Shape& sizes, const std::array<int64_t, 4>& strides, DType dtype) {
  if (sizes.rank() != 4) throw ShapeError(cat("cuDNN strided descriptor: rank 4 (N, C, H, W) expected, got ", sizes.str()));
  int n[4] = {}, st[4] = {};
  for (int i = 0; i < 4; ++i) {
    if (sizes[i] > INT_MAX || strides[static_cast<size_t>(i)] > INT_MAX) {
      throw ShapeError(cat("cuDNN strided descriptor: ", sizes.str(), " with strides (", strides[0], ", ", strides[1],
                           ", ", strides[2], ", ", strides[3], ") is beyond cuDNN's int range"));
    }
    n[i] = static_cast<int>(sizes[i]);
    st[i] = static_cast<int>(strides[static_cast<size_t>(i)]);
  }
  auto desc = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
  CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(desc.get(), cudnn_data_type(dtype), n[0], n[1], n[2], n[3], st[0], st[1],
                                           st[2], st[3]));
  return desc;
}

LayoutBridge::LayoutBridge(const Shape& shape, DType dtype, Layout stored, Layout computed)
    : needed_(stored != computed && !layouts_share_bytes(shape)),
      bytes_(static_cast<size_t>(shape.numel()) * size_of(dtype)) {
  if (!needed_) return;
  stored_ = make_tensor_descriptor(shape, dtype, stored);
  computed_ = make_tensor_descriptor(shape, dtype, computed);
}

void LayoutBridge::to_computed(Context& ctx, const void* stored, void* computed, const float* beta) const {
  CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, stored_.get(), stored, beta, computed_.get(), computed));
}

void LayoutBridge::to_stored(Context& ctx, const void* computed, void* stored, const float* beta) const {
  CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, computed_.get(), computed, beta, stored_.get(), stored));
}

ProbeBuffers::ProbeBuffers(const Context& ctx) : stream_(stream_of(ctx)) {}

CudaBuffer ProbeBuffers::zeroed(size_t bytes) {
  const size_t size = std::max<size_t>(bytes, 1);
  void* data = nullptr;
  const cudaError_t status = cudaMalloc(&data, size);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear it, so that no later check reports it
    if (short_of_memory_.empty()) short_of_memory_ = cat("no device memory for a probe buffer of ", size, " bytes");
    return CudaBuffer();
  }
  CUDA_CHECK(status);
  CudaBuffer buffer(data);
  CUDA_CHECK(cudaMemsetAsync(data, 0, size, stream_));
  return buffer;
}

NarrowParamGrads allocate_narrow_param_grads(Context& ctx, const Shape& weight, int64_t bias, DType dtype) {
  const size_t bias_offset = aligned_share(static_cast<size_t>(weight.numel()) * size_of(dtype));
  const int64_t elements = static_cast<int64_t>(bias_offset / size_of(dtype)) + bias;
  const Tensor grads = ctx.allocate(Shape{elements}, dtype, MemoryCategory::kGradients);
  NarrowParamGrads g{.weight = grads.view(0, weight, dtype), .bias = Tensor()};
  if (bias > 0) g.bias = grads.view(bias_offset, Shape{bias}, dtype);
  return g;
}

void write_or_add_tensor(Context& ctx, GradMode mode, const Tensor& dy, const Tensor& dx) {
  if (dy.dtype() != dx.dtype() || dy.numel() != dx.numel()) {
    throw ShapeError(cat("a gradient passed through: dy ", dy.shape().str(), " ", name_of(dy.dtype()), " and dx ",
                         dx.shape().str(), " ", name_of(dx.dtype()), " differ"));
  }
  if (mode == GradMode::kWrite) {
    CUDA_CHECK(cudaMemcpyAsync(dx.raw(), dy.raw(), dx.bytes(), cudaMemcpyDeviceToDevice, stream_of(ctx)));
  } else {
    launch_add(dx.raw(), dy.raw(), dx.raw(), dx.numel(), dx.dtype(), stream_of(ctx));
  }
}

}  // namespace glassbox
