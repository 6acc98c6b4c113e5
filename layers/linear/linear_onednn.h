// layers/linear/linear_onednn.h: Linear's forward on oneDNN's matmul primitive,
// built only with oneDNN (cmake/CpuConv.cmake), for the batches where it beats
// the other two paths (Note [Linear forward on oneDNN's matmul] in linear.cpp).
//
// y = x w^T + b on Glassbox's own row-major tensors, read and written in place:
// w (out, in) is the matmul's (in, out) weights in the transposed ("ba")
// layout, so nothing is reordered or copied. oneDNN's scratchpad (its packed
// blocks of the weights) is the layer's workspace, sized at prepare (Note
// [oneDNN's scratchpad] in conv2d_onednn.cpp).
#pragma once

#include <memory>
#include <string>

#include "layers/layer.h"

namespace glassbox {

class OneDnnLinearForward final : public BackendState {
 public:
  // Builds the primitive for `rows` rows of `in` features to `out`; `backward`
  // names the path the layer's backward runs on ("Eigen"). Throws ConfigError
  // naming `layer` if oneDNN refuses the shapes.
  OneDnnLinearForward(const std::string& layer, int64_t rows, int64_t in, int64_t out, bool bias,
                      std::string backward);
  ~OneDnnLinearForward() override;

  // "oneDNN matmul brg:avx512_core (forward); backward: Eigen on OpenBLAS"
  std::string algorithms() const override;
  // oneDNN found only its reference code ("ref:...") for these shapes.
  bool uses_reference_code() const;
  size_t workspace_bytes() const;

  // y = x w^T (+ b where the layer has a bias).
  void forward(const float* x, const float* w, const float* b, float* y, void* workspace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glassbox
