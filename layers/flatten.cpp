// layers/flatten.cpp: shapes and the CPU path (parallel copies and adds).
#include "layers/flatten.h"

#include <cstring>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

Shape Flatten::infer(std::span<const Shape> inputs) const {
  const Shape& x = inputs[0];
  if (x.rank() < 2) fail(cat("expects (N, d1, ...) input of rank 2 or more, got ", x.str()));
  return Shape{x[0], x.numel_from(0)};
}

void Flatten::forward_cpu(Context&, const ForwardArgs& args) {
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    std::memcpy(y + begin, x + begin, static_cast<size_t>(end - begin) * sizeof(float));
  });
}

void Flatten::backward_cpu(Context&, const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  float* dy = args.output_grad.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    write_or_add(args.input_grad_modes[0], as_array(dx + begin, n), as_array(dy + begin, n));
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Flatten)
}  // namespace glassbox
#endif
