// layers/linear.cpp: shapes and the CPU path (Eigen GEMMs, Eigen's threading).
#include "layers/linear.h"

#include "layers/eigen_maps.h"

namespace glassbox {

Linear::Linear(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (options_.out_features <= 0) fail_option(cat("out_features must be positive, got ", options_.out_features));
}

std::string Linear::describe() const {
  return cat(input_shapes().at(0)[1], " -> ", options_.out_features, options_.bias ? "" : ", no bias");
}

Shape Linear::infer(std::span<const Shape> inputs) const {
  if (inputs[0].rank() != 2) {
    fail(cat("expects (N, features) input, got ", inputs[0].str(),
             inputs[0].rank() > 2 ? "; flatten it first" : ""));
  }
  return Shape{inputs[0][0], options_.out_features};
}

std::vector<ParamSpec> Linear::param_specs() const {
  const int64_t in = input_shapes().at(0)[1];
  std::vector<ParamSpec> specs = {{"weight", Shape{options_.out_features, in}, Init::kFanInUniform, in}};
  if (options_.bias) specs.push_back({"bias", Shape{options_.out_features}, Init::kFanInUniform, in});
  return specs;
}

int64_t Linear::macs() const {
  return input_shapes().at(0)[0] * input_shapes().at(0)[1] * options_.out_features;
}

void Linear::forward_cpu(Context&, const ForwardArgs& args) {
  const int64_t n = input_shapes()[0][0], in = input_shapes()[0][1], out = options_.out_features;
  auto x = as_matrix(args.inputs[0], n, in);
  auto w = as_matrix(args.params[0], out, in);
  auto y = as_matrix(args.output, n, out);
  y.noalias() = x * w.transpose();
  if (options_.bias) y.rowwise() += as_matrix(args.params[1], 1, out).row(0);
}

void Linear::backward_cpu(Context&, const BackwardArgs& args) {
  const int64_t n = input_shapes()[0][0], in = input_shapes()[0][1], out = options_.out_features;
  auto x = as_matrix(args.inputs[0], n, in);
  auto w = as_matrix(args.params[0], out, in);
  auto dy = as_matrix(args.output_grad, n, out);
  if (args.input_grads[0].defined()) {
    auto dx = as_matrix(args.input_grads[0], n, in);
    if (args.input_grad_modes[0] == GradMode::kAdd) {
      dx.noalias() += dy * w;
    } else {
      dx.noalias() = dy * w;
    }
  }
  as_matrix(args.param_grads[0], out, in).noalias() += dy.transpose() * x;
  if (options_.bias) as_matrix(args.param_grads[1], 1, out).row(0) += dy.colwise().sum();
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Linear)
}  // namespace glassbox
#endif
