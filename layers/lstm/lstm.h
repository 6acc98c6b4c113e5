// layers/lstm/lstm.h: a stack of LSTM layers over time-major sequences, as
// PyTorch's nn.LSTM (batch_first=False) and cuDNN's CUDNN_LSTM compute it.
//   x:(T,B,I)  ->  y:(T,B,H); L layers, layer l reads x (l = 0) or the output of layer l - 1
//   per layer and step t, gate order i, f, g, o (PyTorch's and cuDNN's):
//     a_t = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh              (B, 4H)
//     i = sigmoid(a_t[:, 0:H])   f = sigmoid(a_t[:, H:2H])
//     g = tanh(a_t[:, 2H:3H])    o = sigmoid(a_t[:, 3H:4H])
//     c_t = f * c_{t-1} + i * g   h_t = o * tanh(c_t)
//   y_t = h_t of the top layer; h_{-1}, c_{-1} = the initial state h0, c0 (L,B,H).
//   dropout p: inverted dropout on the output of every layer but the last,
//   in training only (nn.LSTM's `dropout`).
//   params of layer l, in this order: weight_ih_l{l} (4H, I or H),
//   weight_hh_l{l} (4H, H), bias_ih_l{l} (4H), bias_hh_l{l} (4H); packed in
//   one block (packs_parameters: the CUDA path hands it to cuDNN as its
//   weight space, each parameter where cuDNN has it, Note [LSTM weight
//   space] in layers/lstm/lstm_cuda.cpp).
//   backward: dx (= or +=) through every layer and step; dW, db += ...; no
//   gradient flows into the initial state (it is detached, as PyTorch's
//   repackage_hidden does for truncated back-propagation through time).
//
// State: the layer owns the initial state h0, c0 and the final state hT, cT,
// each (L,B,H). With carry_state, each forward starts from the previous
// forward's final state (truncated BPTT across batches), except the first
// after prepare, reset_state or set_initial_state; without it, every forward
// starts from h0, c0, which are zeros unless set_initial_state gave them.
// CPU: Eigen products (the input projection of a whole sequence as one GEMM,
// then per step the recurrent GEMM fused with the gates). Where built with
// oneDNN, the forward runs its per-step recurrent products on oneDNN's
// matmul (Note [The recurrent step on oneDNN's matmul] in
// layers/lstm/lstm_steps_onednn.h). An inference plan runs the same forward and
// keeps no cells (Note [LSTM inference on the training forward's steps] in
// layers/lstm/lstm_cpu.cpp).
// CUDA: cuDNN's RNN API.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace glassbox {

class OneDnnLstmSteps;  // layers/lstm/lstm_steps_onednn.h, where built with oneDNN

class Lstm final : public Layer {
 public:
  static constexpr int kMaxLayers = 1024;  // far past any stack trained (the zoo's have 2)
  struct Options {
    int hidden = 0;            // H
    int layers = 1;            // L, 1 to kMaxLayers
    float dropout = 0.0f;      // between layers, training only, in [0, 1)
    bool bias = true;
    bool carry_state = false;  // start each forward from the last one's final state
  };
  Lstm(std::string name, Options options);

  std::string_view type() const override { return "LSTM"; }
  std::string describe() const override;  // "32 -> 64, 2 layers, dropout 0.2"
  Shape infer(std::span<const Shape> inputs) const override;
  std::vector<ParamSpec> param_specs() const override;
  // 4H (I_l + H) per layer, step and sequence: the input and recurrent products.
  int64_t macs() const override;
  // The default, plus what a training forward keeps for backward (gates,
  // cells, layer outputs: 6H floats per layer, step and sequence; dropout
  // masks between layers), the gate gradients that the two halves of
  // backward pass on (4H): they outweigh y; backward-data reads every
  // weight matrix, backward-weights every layer's outputs rather than dy.
  int64_t bytes_moved(Pass pass) const override;
  // dx through the recurrence of every layer, then dW and db of every layer.
  bool splits_backward() const override { return true; }
  bool packs_parameters() const override { return true; }
  // In a bf16 or fp16 graph the LSTM computes in fp32 (its values are staged),
  // and takes its fp32 master weights as they lie: the one block cuDNN's
  // weight space is. A 16-bit copy staged back to fp32 would come one tensor
  // at a time, not in the packed layout (graph/mixed_precision.h).
  bool keeps_fp32_parameters() const override { return true; }
  // Back to back on the CPU; where cuDNN's weight space has them on CUDA.
  std::vector<size_t> packed_offsets() const override;
  const Options& options() const { return options_; }

  // Zeroes the initial and final state; the next forward starts from zeros
  // (the start of an epoch, before an evaluation). After prepare.
  void reset_state(Context& ctx);
  void reset_carried_state(Context& ctx) override { reset_state(ctx); }  // Graph::reset_carried_state
  // The next forward starts from (h, c), each (L,B,H) on any device; without
  // carry_state, every forward does until reset_state. After prepare.
  void set_initial_state(Context& ctx, const Tensor& h, const Tensor& c);
  // (L,B,H): the state the last forward started from, and the one it ended in.
  const Tensor& initial_hidden() const { return h0_; }
  const Tensor& initial_cell() const { return c0_; }
  const Tensor& final_hidden() const { return hT_; }
  const Tensor& final_cell() const { return cT_; }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  bool writes_param_grads_on_cpu() const override { return true; }
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // Both backends: h0, c0, hT, cT, zeroed (prepare_*).
  void allocate_state(Context& ctx);
  // Both backends, at the start of each forward: carries the final state
  // over (Note [The carried state is copied], lstm.cpp).
  void begin_forward(Context& ctx);
  int64_t input_size(int layer) const;  // I_l: I for layer 0, H above
  void require_prepared(const char* call) const;  // Error unless the state exists
  void check_state_shape(const Tensor& t, const char* what) const;  // ShapeError unless (L,B,H)
  // CPU training plans: the forward's recurrent products on oneDNN and their workspace,
  // or nulls where built without it (layers/lstm/lstm_cpu.cpp).
  std::pair<OneDnnLstmSteps*, void*> onednn_steps(Context& ctx) const;

  Options options_;
  Tensor h0_, c0_, hT_, cT_;  // (L,B,H)

  // CPU, what backward reads (training); in inference only the scratch forward needs.
  std::vector<Tensor> gates_;   // per layer (T,B,4H): activated i, f, g, o | inference: one, shared
  std::vector<Tensor> cells_;   // per layer (T,B,H): c_t (training only)
  std::vector<Tensor> hidden_;  // per layer but the top (T,B,H): h_t | inference: two, in turn
  std::vector<Tensor> masks_;   // per layer but the top (T,B,H): m / (1 - p) (training, p > 0)
  std::vector<Tensor> dropped_; // per layer but the top (T,B,H): h_t * mask, the next layer's input
  std::vector<Tensor> dgates_;  // per layer (T,B,4H): dL/da_t, from the data half to the weight half
  Tensor dhidden_;              // (T,B,H): dL/dh of the layer below (L > 1)
  Tensor dh_step_, dc_step_;    // (B,H): the step's dL/dh_t and the carried dL/dc
  bool last_forward_dropped_ = false;

  // CUDA: each parameter's byte offset in cuDNN's weight space (prepare_cuda).
  std::vector<size_t> packed_offsets_;
};

}  // namespace glassbox
