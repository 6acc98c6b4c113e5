// layers/bias_gradient_cuda.h: db += the sum of dy over every axis but its
// channels, on cuBLAS, into a float32 gradient whatever dy's type (Note [A
// bias gradient on cuBLAS], layers/bias_gradient_plan.h). What Conv2d's and,
// where cuBLASLt has no bias-gradient epilogue for its shapes, Linear's
// backward-weights use.
#pragma once

#include "layers/bias_gradient_plan.h"
#include "tensor/context.h"
#include "tensor/tensor.h"

namespace glassbox {

class BiasGradient {
 public:
  BiasGradient() = default;
  // For dy of `images` x `channels` x `pixels` values of `data` (float32,
  // float16 or bfloat16) stored in `layout`: plans the products and fills
  // their vectors of ones (MemoryCategory::kLayerState), at prepare.
  BiasGradient(Context& ctx, int64_t images, int64_t channels, int64_t pixels, Layout layout, DType data);

  bool planned() const { return plan_.channels > 0; }
  // Bytes of workspace run() needs for the partial sums (0 with one product).
  size_t workspace_bytes() const { return static_cast<size_t>(plan_.partial_size()) * sizeof(float); }
  // "cuBLAS, two products" (or one) for algorithms().
  std::string describe() const;

  // db (float32, `channels` values) += the sums of dy, on the context's
  // stream; `workspace` holds workspace_bytes() (nullptr where 0).
  void run(Context& ctx, const void* dy, float* db, void* workspace) const;

 private:
  BiasGradientPlan plan_;
  DType data_ = DType::kFloat32;
  Tensor first_ones_, second_ones_;  // of data_ and float32
};

}  // namespace glassbox
