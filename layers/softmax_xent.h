// layers/softmax_xent.h: softmax cross-entropy loss, fused, mean over the batch.
//   logits:(N,K) float32, labels:(N) int32 in [0, K)  ->  loss:(1)
// or, over leading dimensions, logits:(...,K) and labels:(...) with the same
// leading sizes ((T,B,K) and (T,B) for a sequence): N is then their product,
// every position is a row, and the loss is the mean over all N of them.
//   logp[n,k] = logits[n,k] - max_j logits[n,j] - log sum_j exp(logits[n,j] - max_j logits[n,j])
//   loss = -1/N * sum_n logp[n, labels[n]]
//   backward: dlogits (= or +=) (exp(logp) - onehot(labels)) / N      (the loss's own gradient is 1)
// Fusing the two keeps the gradient exact and cheap: no division by a
// probability that may underflow. CUDA: cudnnSoftmaxForward (log mode) for
// logp, then a small kernel (softmax_xent.cu) for the label gather, the mean
// and the gradient, where no library call fits. The CPU path rejects a label
// outside [0, K) with an error naming the sample (the position, (t, b), over
// leading dimensions); the CUDA kernel cannot throw, so it makes the loss NaN
// instead (never a silent wrong number).
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class SoftmaxCrossEntropy final : public Layer {
 public:
  explicit SoftmaxCrossEntropy(std::string name) : Layer(std::move(name)) {}

  std::string_view type() const override { return "SoftmaxCrossEntropy"; }
  // Backward reads its saved log-probabilities and the labels, not the logits.
  bool backward_reads_input(int index) const override { return index == 1; }
  std::string describe() const override;  // "1000 classes, mean over 64"; "... over 700 positions (35, 20)"
  int min_inputs() const override { return 2; }
  int max_inputs() const override { return 2; }
  DType input_dtype(int index) const override { return index == 1 ? DType::kInt32 : DType::kFloat32; }
  bool is_loss() const override { return true; }
  // The default, plus the saved log-probabilities (N,K): forward writes them
  // and backward reads them, a tensor the size of the logits each way.
  int64_t bytes_moved(Pass pass) const override;
  Shape infer(std::span<const Shape> inputs) const override;

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // Throws Error naming the first sample whose label is outside [0, K).
  void check_labels(const Tensor& labels) const;
  // From the bound logits: N (the product of the leading sizes) and K.
  int64_t rows() const;
  int64_t classes() const;

  Tensor log_probs_;  // logp from the last forward, shaped as the logits
};

}  // namespace glassbox
