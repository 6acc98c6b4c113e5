// layers/lstm_onednn.h: the LSTM's CPU inference forward on oneDNN's LSTM
// primitive (built only with oneDNN, as layers/conv2d_onednn.h is).
//
// Note [LSTM inference on oneDNN]: Glassbox's own forward (layers/lstm_cpu.cpp)
// runs each step's recurrent product h_{t-1} W_hh^T as OpenBLAS calls on B
// rows (20 in the LSTM benchmark), four per thread and step: the LSTM layer's
// forward runs at 145 GFLOP/s where a large product runs at 212 (`glassbox
// time LSTM`). oneDNN's LSTM primitive (its brgemm kernels; PyTorch's CPU
// nn.LSTM runs the same primitive, aten::mkldnn_rnn_layer in its profile)
// reorders the weights into its own blocked layout once per call and runs
// the whole sequence. Measured on the 2-core EPYC, one layer of 650 units,
// 35 steps, batch 20, the weight reorders included: 25.7 ms against
// Glassbox's 32.6. oneDNN's forward_training would keep its gates in an
// opaque workspace that Glassbox's backward cannot read, so training keeps
// Glassbox's forward: only inference plans run here.
//
// Per call the weights are reordered from PyTorch's layout (ldgoi, the
// layer's own parameters) into oneDNN's, and the two biases summed into one:
// the parameters may change between calls (a training graph that shares
// them). The copies and oneDNN's scratchpad live in the layer's workspace,
// sized at prepare (Note [oneDNN's scratchpad] in conv2d_onednn.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "layers/layer.h"

namespace glassbox {

class OneDnnLstm final : public BackendState {
 public:
  struct Sizes {
    int64_t steps, batch, input, hidden;  // T, B, I (of layer 0), H
    int layers;
  };
  // Builds the primitives (one for layer 0, one for the layers above when
  // I != H). Throws ConfigError naming `layer` if oneDNN refuses the shapes.
  OneDnnLstm(const std::string& layer, const Sizes& sizes);
  ~OneDnnLstm() override;

  std::string algorithms() const override;  // "oneDNN LSTM inference brgemm"
  size_t workspace_bytes() const;

  // One layer, forward inference: y (T,B,H) from x (T,B,I_l), starting from
  // (h0, c0) and ending in (hT, cT), each (B,H). w_ih (4H,I_l), w_hh (4H,H),
  // b_ih and b_hh (4H, null without bias): PyTorch's layouts.
  struct LayerTensors {
    const float *x, *w_ih, *w_hh, *b_ih, *b_hh, *h0, *c0;
    float *y, *hT, *cT;
  };
  void forward(int layer, const LayerTensors& tensors, void* workspace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glassbox
