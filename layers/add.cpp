// layers/add.cpp: shapes and the CPU path. One pass per cache-sized chunk:
// each chunk of y is written from x0 + x1 and then accumulates the other
// inputs (and takes a fused ReLU) while it is still in cache.
#include "layers/add.h"

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

std::string Add::describe() const { return cat(input_shapes().size(), " inputs"); }

Shape Add::infer(std::span<const Shape> inputs) const {
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i] != inputs[0]) {
      fail(cat("input ", i, " has shape ", inputs[i].str(), ", expected ", inputs[0].str(),
               " (the shape of input 0)"));
    }
  }
  return inputs[0];
}

void Add::forward_cpu(Context&, const ForwardArgs& args) {
  float* y = args.output.data<float>();
  const bool relu = fused_relu();  // Note [A ReLU fused into its producer]
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    auto out = as_array(y + begin, n);
    out = as_array(args.inputs[0].data<float>() + begin, n) + as_array(args.inputs[1].data<float>() + begin, n);
    for (size_t i = 2; i < args.inputs.size(); ++i) out += as_array(args.inputs[i].data<float>() + begin, n);
    if (relu) out = out.max(0.0f);  // as ReLU's forward, on the chunk while it is in cache
  });
}

// Slots are handled in order within each chunk: when one tensor is the
// gradient of two inputs (Add(x, x)), the graph gives slot 0 kWrite and
// slot 1 kAdd, and the second must see what the first wrote.
void Add::backward_cpu(Context&, const BackwardArgs& args) {
  float* dy = args.output_grad.data<float>();
  parallel_for(args.output.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    for (size_t i = 0; i < args.input_grads.size(); ++i) {
      if (!args.input_grads[i].defined()) continue;
      float* dx = args.input_grads[i].data<float>() + begin;
      write_or_add(args.input_grad_modes[i], as_array(dx, n), as_array(dy + begin, n));
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Add)
}  // namespace glassbox
#endif
