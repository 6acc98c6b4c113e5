// layers/concat_cuda.cpp: Concat with strided copies and cuDNN transforms.
//
// All NCHW (every input and y): input i is N rows of C_i*H*W contiguous
// elements; in y those rows start offset_i*H*W elements into each sample and
// lie C*H*W elements apart. That is exactly a 2-D copy (cudaMemcpy2DAsync:
// `height` rows of `width` bytes, each side with its own pitch), one per
// input, both ways. Accumulating into dx_i needs arithmetic: cudnnTransformTensor
// computes dx_i = 1 * slice + 1 * dx_i, where the slice of dy is described
// with y's strides (make_strided_descriptor).
//
// Note [Concat of channels-last values]: where any input or y is stored NHWC,
// input i's place in y is the view (N, C_i, H, W) with y's strides in y's
// layout (packed_strides), starting offset_i times y's channel stride into y:
// offset_i*H*W elements in NCHW, offset_i in NHWC. cudnnTransformTensor reads
// and writes any strides of equal sizes, so one transform per input, from x_i
// (packed, in its own layout) into that view with beta = 0, both reorders and
// places it; backward transforms the view of dy into dx_i, beta = 0 | 1 per
// GradMode. When everything is NHWC a 2-D copy would also do (N*H*W rows of
// C_i elements, pitch C), but the transforms serve every mix of layouts with
// one code path, that case included. With beta = 0 cuDNN does not read the
// destination, so NaN or garbage in y or dx_i cannot leak in (cuDNN's
// scaling-parameter rule).
//
// The elements are float32, or bfloat16 or float16 in a mixed-precision graph
// (value_storage(), Note [16-bit values in a layer]): the copies' widths and
// pitches are in bytes of that type, and cudnnTransformTensor takes half or
// bfloat16 source and destination of one type (cuDNN 9's argument checks
// refuse only a mix of the two; oneDNN's cuDNN backend reorders bf16 with it),
// alpha and beta float.
#include "layers/concat.h"

#include <array>
#include <vector>

#include "layers/layer_cuda.h"

namespace glassbox {
namespace {

struct ConcatState final : BackendState {
  bool all_nchw = true;                  // every input and y NCHW: the 2-D copies
  int64_t channel_stride = 0;            // elements between channels of y: H*W (NCHW) or 1 (NHWC)
  std::vector<TensorDescriptor> slices;  // (N, C_i, H, W) with y's strides: input i's part of y and dy
  std::vector<TensorDescriptor> inputs;  // (N, C_i, H, W) packed in input i's layout: x_i and dx_i
};

}  // namespace

void Concat::prepare_cuda(Context& ctx, const PrepareOptions&) {
  compute_offsets();
  const Shape& y = output_shape();
  auto state = std::make_unique<ConcatState>();
  state->all_nchw = output_layout() == Layout::kNCHW;
  for (size_t i = 0; i < input_shapes().size(); ++i) state->all_nchw &= input_layout(i) == Layout::kNCHW;
  if (state->all_nchw) {
    const int64_t row_bytes = y.numel_from(0) * static_cast<int64_t>(size_of(value_storage()));
    int max_pitch = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, cuda_resources(ctx).device));
    if (row_bytes > max_pitch) {
      fail(cat("one sample of the output, ", y.str(), ", is ", row_bytes,
               " bytes: beyond the device's largest 2-D copy pitch (", max_pitch, " bytes)"));
    }
  }
  // make_strided_descriptor checks every size and stride against cuDNN's int range.
  const std::array<int64_t, 4> y_strides = packed_strides(y, output_layout());
  state->channel_stride = y_strides[1];
  for (size_t i = 0; i < input_shapes().size(); ++i) {
    const Shape& x = input_shapes()[i];
    state->inputs.push_back(make_tensor_descriptor(x, value_storage(), input_layout(i)));
    state->slices.push_back(make_strided_descriptor(x, y_strides, value_storage()));
  }
  backend_ = std::move(state);
}

void Concat::forward_cuda(Context& ctx, const ForwardArgs& args) {
  auto& s = state_as<ConcatState>(backend_);
  const size_t element = size_of(value_storage());
  char* y = static_cast<char*>(args.output.raw());
  if (!s.all_nchw) {  // Note [Concat of channels-last values]
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      char* slice = y + static_cast<size_t>(offsets_[i] * s.channel_stride) * element;
      CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.inputs[i].get(), args.inputs[i].raw(), &kZero,
                                       s.slices[i].get(), slice));
    }
    return;
  }
  const size_t pitch = static_cast<size_t>(output_shape().numel_from(0)) * element;
  const size_t rows = static_cast<size_t>(output_shape()[0]);
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const size_t width = static_cast<size_t>(input_shapes()[i].numel_from(0)) * element;
    CUDA_CHECK(cudaMemcpy2DAsync(y + static_cast<size_t>(offsets_[i] * s.channel_stride) * element, pitch,
                                 args.inputs[i].raw(), width, width, rows, cudaMemcpyDeviceToDevice, stream_of(ctx)));
  }
}

// Slot order on one stream, whatever the layouts: Concat(x, x)'s kWrite then
// kAdd into one tensor happen in that order.
void Concat::backward_cuda(Context& ctx, const BackwardArgs& args) {
  auto& s = state_as<ConcatState>(backend_);
  const size_t element = size_of(value_storage());
  const size_t pitch = static_cast<size_t>(output_shape().numel_from(0)) * element;
  const size_t rows = static_cast<size_t>(output_shape()[0]);
  const char* dy = static_cast<const char*>(args.output_grad.raw());
  for (size_t i = 0; i < args.input_grads.size(); ++i) {
    const Tensor& dx = args.input_grads[i];
    if (!dx.defined()) continue;
    const char* slice = dy + static_cast<size_t>(offsets_[i] * s.channel_stride) * element;
    if (s.all_nchw && args.input_grad_modes[i] == GradMode::kWrite) {
      const size_t width = static_cast<size_t>(input_shapes()[i].numel_from(0)) * element;
      CUDA_CHECK(cudaMemcpy2DAsync(dx.raw(), width, slice, pitch, width, rows, cudaMemcpyDeviceToDevice,
                                   stream_of(ctx)));
    } else {  // an add, or any NHWC side (Note [Concat of channels-last values])
      CUDNN_CHECK(cudnnTransformTensor(cudnn_of(ctx), &kOne, s.slices[i].get(), slice,
                                       beta_for(args.input_grad_modes[i]), s.inputs[i].get(), dx.raw()));
    }
  }
}

}  // namespace glassbox
