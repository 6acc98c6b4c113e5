// layers/softmax_xent.cpp: shapes and the CPU path. Rows are independent:
// log-softmax row by row in parallel (Eigen, vectorised), then the loss as a
// serial sum over N in double (N is small, a batch or T*B positions; the
// order is fixed, so the loss is the same whatever the thread count). Over
// leading dimensions the logits are the same packed (N, K) rows.
#include "layers/softmax_xent.h"

#include <algorithm>
#include <cmath>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

int64_t SoftmaxCrossEntropy::classes() const {
  const Shape& logits = input_shapes().at(0);
  return logits[logits.rank() - 1];
}
int64_t SoftmaxCrossEntropy::rows() const { return input_shapes().at(1).numel(); }

std::string SoftmaxCrossEntropy::describe() const {
  const Shape& labels = input_shapes().at(1);
  return cat(classes(), " classes, mean over ", rows(), labels.rank() > 1 ? cat(" positions ", labels.str()) : "");
}

// Labels have the logits' shape without its last dimension: one per row,
// (N) for (N, K), (T, B) for (T, B, K).
Shape SoftmaxCrossEntropy::infer(std::span<const Shape> inputs) const {
  const Shape& logits = inputs[0];
  const Shape& labels = inputs[1];
  if (logits.rank() < 2) {
    fail(cat("input 0 must be (N, K) logits, or (..., K) with more leading dimensions, got shape ", logits.str()));
  }
  const std::vector<int64_t> leading(logits.dims().begin(), logits.dims().end() - 1);
  if (labels.dims() != leading) {
    fail(cat("input 1 must be the labels, one per row of the logits ", logits.str(), ", so shape ",
             Shape(leading).str(), "; got shape ", labels.str()));
  }
  return Shape{1};
}

void SoftmaxCrossEntropy::check_labels(const Tensor& labels) const {
  const int64_t n = rows(), k = classes();
  const Shape& shape = input_shapes()[1];
  const int* label = labels.data<int>();
  for (int64_t i = 0; i < n; ++i) {
    if (label[i] < 0 || label[i] >= k) {
      const std::string where = shape.rank() == 1 ? cat("sample ", i) : cat("position ", shape.index_str(i));
      throw DataError(
          cat(name(), " (SoftmaxCrossEntropy): ", where, " has label ", label[i], ", outside [0, ", k, ")"));
    }
  }
}

int64_t SoftmaxCrossEntropy::bytes_moved(Pass pass) const {
  const int64_t log_probs = input_shapes()[0].numel() * static_cast<int64_t>(size_of(DType::kFloat32));
  const bool moves_log_probs = pass == Pass::kForward || pass == Pass::kBackward;
  return Layer::bytes_moved(pass) + (moves_log_probs ? log_probs : 0);
}

void SoftmaxCrossEntropy::prepare_cpu(Context& ctx, const PrepareOptions&) {
  log_probs_ = ctx.allocate(input_shapes()[0], DType::kFloat32, MemoryCategory::kLayerState);
}

void SoftmaxCrossEntropy::forward_cpu(Context&, const ForwardArgs& args) {
  const int64_t n = rows(), k = classes();
  check_labels(args.inputs[1]);  // before any work, and outside the parallel region
  const float* logits = args.inputs[0].data<float>();
  float* logp = log_probs_.data<float>();
  parallel_for(n, std::max<int64_t>(1, kElementwiseGrain / k), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const Eigen::Map<const Eigen::ArrayXf> x(logits + row * k, k);
      const float max = x.maxCoeff();
      const float log_sum = std::log((x - max).exp().sum());
      as_array(logp + row * k, k) = (x - max) - log_sum;
    }
  });
  const int* labels = args.inputs[1].data<int>();
  double sum = 0.0;
  for (int64_t row = 0; row < n; ++row) sum += logp[row * k + labels[row]];
  args.output.data<float>()[0] = static_cast<float>(-sum / static_cast<double>(n));
}

void SoftmaxCrossEntropy::backward_cpu(Context&, const BackwardArgs& args) {
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  const int64_t n = rows(), k = classes();
  check_labels(args.inputs[1]);  // the one-hot index below must be in range
  const float inv_n = 1.0f / static_cast<float>(n);
  const int* labels = args.inputs[1].data<int>();
  float* logp = log_probs_.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(n, std::max<int64_t>(1, kElementwiseGrain / k), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      auto grad = as_array(dx + row * k, k);
      auto probs = as_array(logp + row * k, k).exp() * inv_n;
      write_or_add(args.input_grad_modes[0], grad, probs);
      grad[labels[row]] -= inv_n;
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(SoftmaxCrossEntropy)
}  // namespace glassbox
#endif
