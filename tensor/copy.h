// tensor/copy.h: explicit copies between host and device, and fills.
// copy() and fill_zero() are queued on the context's stream; to_vector() and
// from_vector() wait for completion, so they are for set-up, tests and reports,
// never inside a step.
#pragma once

#include <span>
#include <vector>

#include "tensor/context.h"
#include "tensor/tensor.h"

namespace glassbox {

// dst <- src. Same dtype and element count; either may be on the host or on
// the context's device. Throws ShapeError naming both tensors otherwise.
void copy(Context& ctx, const Tensor& src, const Tensor& dst);
void fill_zero(Context& ctx, const Tensor& dst);

template <typename T>
std::vector<T> to_vector(Context& ctx, const Tensor& src);
template <typename T>
void from_vector(Context& ctx, std::span<const T> values, const Tensor& dst);
// The values of a float32, float16 or bfloat16 tensor as float32 (exact), on
// the host: what reports, evaluation and tests read from a 16-bit graph.
std::vector<float> to_float_vector(Context& ctx, const Tensor& src);

}  // namespace glassbox
