// layers/layer_cuda.cpp: descriptors from shapes, gradients passed through.
#include "layers/layer_cuda.h"

#include <climits>

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

void write_or_add_tensor(Context& ctx, GradMode mode, cudnnTensorDescriptor_t desc, const Tensor& dy,
                         const Tensor& dx) {
  if (mode == GradMode::kWrite) {
    CUDA_CHECK(cudaMemcpyAsync(dx.raw(), dy.raw(), dx.bytes(), cudaMemcpyDeviceToDevice, stream_of(ctx)));
  } else {
    CUDNN_CHECK(cudnnAddTensor(cudnn_of(ctx), &kOne, desc, dy.raw(), &kOne, desc, dx.raw()));
  }
}

}  // namespace glassbox
