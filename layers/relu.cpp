// layers/relu.cpp: ReLU on the CPU.
#include "layers/relu.h"

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

void relu_in_place_cpu(float* y, int64_t n) {
  parallel_for(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    as_array(y + begin, end - begin) = as_array(y + begin, end - begin).max(0.0f);
  });
}

void ReLU::forward_cpu(Context&, const ForwardArgs& args) {
  float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    as_array(y + begin, end - begin) = as_array(x + begin, end - begin).max(0.0f);
  });
}

void ReLU::backward_cpu(Context&, const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  float* y = args.output.data<float>();
  float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    auto grad = (as_array(y + begin, n) > 0.0f).select(as_array(dy + begin, n), 0.0f);
    write_or_add(args.input_grad_modes[0], as_array(dx + begin, n), grad);
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(ReLU)
}  // namespace glassbox
#endif
