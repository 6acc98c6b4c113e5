// layers/linear.cpp: shapes and the CPU path (blocked Eigen products).
#include "layers/linear.h"

#include <algorithm>

#include "tensor/eigen_maps.h"

namespace glassbox {

Linear::Linear(std::string name, Options options) : Layer(std::move(name)), options_(options) {
  if (options_.out_features <= 0) fail_option(cat("out_features must be positive, got ", options_.out_features));
}

int64_t Linear::in_features() const {
  const Shape& x = input_shapes().at(0);
  return x[x.rank() - 1];
}
int64_t Linear::rows() const { return input_shapes().at(0).numel() / in_features(); }

std::string Linear::describe() const {
  return cat(in_features(), " -> ", options_.out_features, options_.bias ? "" : ", no bias");
}

// Note [Linear over leading dims]: only with over_last_dim does a rank above
// 2 pass; by default (N, C, H, W) stays an error that says to flatten, since
// read as (N*C*H) rows of W features it would train, just not as the network
// its author wrote.
Shape Linear::infer(std::span<const Shape> inputs) const {
  const Shape& x = inputs[0];
  if (options_.over_last_dim) {
    if (x.rank() < 2) fail(cat("expects (..., features) input with a batch dimension, got ", x.str()));
    std::vector<int64_t> dims = x.dims();
    dims.back() = options_.out_features;
    return Shape(std::move(dims));
  }
  if (x.rank() != 2) {
    fail(cat("expects (N, features) input, got ", x.str(), x.rank() > 2 ? "; flatten it first" : ""));
  }
  return Shape{x[0], options_.out_features};
}

std::vector<ParamSpec> Linear::param_specs() const {
  const int64_t in = in_features();
  std::vector<ParamSpec> specs = {{"weight", Shape{options_.out_features, in}, Init::kFanInUniform, in}};
  if (options_.bias) specs.push_back({"bias", Shape{options_.out_features}, Init::kFanInUniform, in});
  return specs;
}

int64_t Linear::macs() const {
  const Shape& x = input_shapes().at(0);
  return checked_multiply(x.numel(), options_.out_features, "multiply-accumulates");
}

// Note [Blocked linear products]: at the small batches of CPU training a
// linear layer streams its whole weight matrix once per pass. Eigen's threaded
// GEMM reads VGG16's fc6 weights (411 MB) at batch 2 in 80 ms, a third of the
// machine's read bandwidth; splitting the weights into row (or column) blocks,
// one per work item, with a single-threaded Eigen product each, takes 22 ms
// for the forward and a quarter of the time for dx (2-core AVX-512 Xeon).
// Small blocks stream best: 64 weight rows per block took 24 ms for fc6's
// forward against 37 ms with 512, and 384 columns per block 36 ms for dx
// against 46 ms with 3072. Every block of the output has one writer.
constexpr int64_t kRowsPerBlock = 64;
constexpr int64_t kColumnsPerBlock = 384;

// body(begin, end) for consecutive blocks of `block` features, over the threads.
template <typename Body>
void for_each_block(int64_t count, int64_t block, const Body& body) {
  const int64_t blocks = (count + block - 1) / block;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) body(b * block, std::min(count, (b + 1) * block));
}

void Linear::forward_cpu(Context&, const ForwardArgs& args) {
  const int64_t n = rows(), in = in_features(), out = options_.out_features;
  auto x = as_matrix(args.inputs[0], n, in);
  auto w = as_matrix(args.params[0], out, in);
  auto y = as_matrix(args.output, n, out);
  for_each_block(out, kRowsPerBlock, [&](int64_t begin, int64_t end) {  // blocks of output features
    auto block = y.middleCols(begin, end - begin);
    block.noalias() = x * w.middleRows(begin, end - begin).transpose();
    if (options_.bias) block.rowwise() += as_matrix(args.params[1], 1, out).row(0).segment(begin, end - begin);
  });
}

void Linear::backward_cpu(Context& ctx, const BackwardArgs& args) {
  const int64_t n = rows(), in = in_features(), out = options_.out_features;
  auto x = as_matrix(args.inputs[0], n, in);
  auto w = as_matrix(args.params[0], out, in);
  auto dy = as_matrix(args.output_grad, n, out);
  if (args.input_grads[0].defined()) {
    auto dx = as_matrix(args.input_grads[0], n, in);
    for_each_block(in, kColumnsPerBlock, [&](int64_t begin, int64_t end) {  // blocks of input features
      auto block = dx.middleCols(begin, end - begin);
      write_or_add(args.input_grad_modes[0], block.noalias(), dy * w.middleCols(begin, end - begin));
    });
  }
  ctx.switch_pass(Pass::kBackwardWeights);
  auto dw = as_matrix(args.param_grads[0], out, in);
  for_each_block(out, kRowsPerBlock, [&](int64_t begin, int64_t end) {  // blocks of dw rows
    dw.middleRows(begin, end - begin).noalias() += dy.middleCols(begin, end - begin).transpose() * x;
  });
  if (options_.bias) as_matrix(args.param_grads[1], 1, out).row(0) += dy.colwise().sum();
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(Linear)
}  // namespace glassbox
#endif
