// layers/lstm/lstm_steps_onednn.h: the recurrent products of the LSTM's forward
// (layers/lstm/lstm_cpu.cpp, training and inference plans) on oneDNN's matmul primitive, one call per
// step, with W_hh reordered into oneDNN's blocked layout once per layer and
// forward. Built only with oneDNN, as layers/linear/linear_onednn.h is.
//
// Note [The recurrent step on oneDNN's matmul]: a step's recurrent product is
// B rows (5 to 80 in the benchmarks) against all of W_hh (4H x H). Read in
// PyTorch's layout, each output is a dot product along a row of W_hh, which
// ends in a horizontal sum of vector lanes and a scalar tail (650 = 40 x 16
// + 10): Glassbox's streamed step (Note [The recurrent step streamed] in
// lstm_cpu.cpp) works that way and runs at about a third of the speed of
// this one. oneDNN's reorder puts W_hh in blocks of consecutive outputs,
// which its brgemm kernel multiplies by each h value broadcast, and the
// reorder is paid once for T steps. The blocked matmul is also about 1.5x as
// fast as Eigen's products on oneDNN's sgemm over blocks of units (the step
// lstm_cpu.cpp runs where W_hh fits in L2 or B > 16), at every B and H of the
// benchmarks (bench/probes/lstm_recurrent_step.cpp).
// The backward's dh += da_{t+1} W_hh stays on Eigen's products: the blocked
// matmul is ahead only at the largest shape (B 80, H 1500) and behind at
// small batches.
// The gates stay Glassbox's (lstm_cpu.cpp): forward_training's workspace in
// oneDNN's own LSTM primitive is opaque to Glassbox's backward, and with the
// matmul alone the gates and cells stay where the backward reads them.
//
// The blocked W_hh and oneDNN's scratchpad live in the layer's workspace,
// sized at prepare (Note [oneDNN's scratchpad] in conv2d_onednn.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "layers/layer.h"

namespace glassbox {

class OneDnnLstmSteps final : public BackendState {
 public:
  // The products a_t += h W_hh^T of `batch` sequences of `hidden` units.
  // Throws ConfigError naming `layer` if oneDNN refuses the shapes.
  OneDnnLstmSteps(const std::string& layer, int64_t batch, int64_t hidden);
  ~OneDnnLstmSteps() override;

  // "Glassbox; recurrent products in forward on oneDNN matmul brg:avx512_core"
  std::string algorithms() const override;
  size_t workspace_bytes() const;

  // W_hh (4H, H), PyTorch's layout, into the workspace's blocked copy, which
  // the steps after read: once per layer and forward.
  void load_weights(const float* w_hh, void* workspace);
  // a (B, 4H) += h (B, H) W_hh^T, after load_weights (the same workspace, untouched since)
  void step(const float* h, float* a);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glassbox
