// layers/concat_cuda.cpp: Concat with strided copies and cuDNN strided adds.
//
// Input i is N rows of C_i*H*W contiguous elements; in y those rows start
// offset_i*H*W elements into each sample and lie C*H*W elements apart. That is
// exactly a 2-D copy (cudaMemcpy2DAsync: `height` rows of `width` bytes, each
// side with its own pitch), one per input, both ways. Accumulating into dx_i
// needs arithmetic: cudnnTransformTensor computes dx_i = 1 * slice + 1 * dx_i,
// where the slice of dy is described with y's strides (cudnnSetTensor4dDescriptorEx).
//
// The elements are float32, or bfloat16 or float16 in a mixed-precision graph
// (value_storage(), Note [16-bit values in a layer]): the copies' widths and
// pitches are in bytes of that type, and cudnnTransformTensor takes half or
// bfloat16 source and destination of one type (cuDNN 9's argument checks
// refuse only a mix of the two; oneDNN's cuDNN backend reorders bf16 with it),
// alpha and beta float.
#include "layers/concat.h"

#include <vector>

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct ConcatState final : BackendState {
  std::vector<TensorDescriptor> slices;  // (N, C_i, H, W) with y's strides: input i's part of dy
  std::vector<TensorDescriptor> inputs;  // (N, C_i, H, W) packed: dx_i
};

}  // namespace

void Concat::prepare_cuda(Context& ctx, const PrepareOptions&) {
  compute_offsets();
  const Shape& y = output_shape();
  const int64_t hw = y[2] * y[3];
  const int64_t row_bytes = y.numel_from(0) * static_cast<int64_t>(size_of(value_storage()));
  int max_pitch = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, cuda_resources(ctx).device));
  if (row_bytes > max_pitch) {
    fail(cat("one sample of the output, ", y.str(), ", is ", row_bytes,
             " bytes: beyond the device's largest 2-D copy pitch (", max_pitch, " bytes)"));
  }
  auto state = std::make_unique<ConcatState>();
  for (size_t i = 0; i < input_shapes().size(); ++i) {
    const Shape& x = input_shapes()[i];
    state->inputs.push_back(make_tensor_descriptor(x, value_storage()));
    auto slice = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
    // Sizes already passed make_tensor_descriptor's int check; the largest
    // stride, C*H*W, is below the pitch limit checked above.
    CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(slice.get(), cudnn_data_type(value_storage()), static_cast<int>(x[0]),
                                             static_cast<int>(x[1]), static_cast<int>(x[2]),
                                             static_cast<int>(x[3]), static_cast<int>(y.numel_from(0)),
                                             static_cast<int>(hw), static_cast<int>(y[3]), 1));
    state->slices.push_back(std::move(slice));
  }
  backend_ = std::move(state);
}

void Concat::forward_cuda(Context& ctx, const ForwardArgs& args) {
  const size_t element = size_of(value_storage());
  const int64_t hw = output_shape()[2] * output_shape()[3];
  const size_t pitch = static_cast<size_t>(output_shape().numel_from(0)) * element;
  const size_t rows = static_cast<size_t>(output_shape()[0]);
  char* y = static_cast<char*>(args.output.raw());
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const size_t width = static_cast<size_t>(input_shapes()[i].numel_from(0)) * element;
    CUDA_CHECK(cudaMemcpy2DAsync(y + static_cast<size_t>(offsets_[i] * hw) * element, pitch, args.inputs[i].raw(),
                                 width, width, rows, cudaMemcpyDeviceToDevice, stream_of(ctx)));
  }
}

// Slot order on one stream: Concat(x, x)'s kWrite then kAdd into one tensor
// happen in that order.
void Concat::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<ConcatState>(backend_);
  const size_t element = size_of(value_storage());
  const int64_t hw = output_shape()[2] * output_shape()[3];
  const size_t pitch = static_cast<size_t>(output_shape().numel_from(0)) * element;
  const size_t rows = static_cast<size_t>(output_shape()[0]);
  const char* dy = static_cast<const char*>(args.output_grad.raw());
  for (size_t i = 0; i < args.input_grads.size(); ++i) {
    const Tensor& dx = args.input_grads[i];
    if (!dx.defined()) continue;
    const char* slice = dy + static_cast<size_t>(offsets_[i] * hw) * element;
    if (args.input_grad_modes[i] == GradMode::kWrite) {
      const size_t width = static_cast<size_t>(input_shapes()[i].numel_from(0)) * element;
      CUDA_CHECK(cudaMemcpy2DAsync(dx.raw(), width, slice, pitch, width, rows, cudaMemcpyDeviceToDevice,
                                   stream_of(ctx)));
    } else {
      CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.slices[i].get(), slice, &kOne,
                                       s.inputs[i].get(), dx.raw()));
    }
  }
}

}  // namespace glassbox
