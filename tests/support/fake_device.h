// tests/support/fake_device.h: tensors that say they are on a device they are
// not on, for the checks that compare a tensor's device with the context's.
// A CPU-only build cannot make a CUDA tensor, yet Layer::forward, copy() and
// Sgd::step must still refuse one handed to a CPU context: these tensors let
// the CPU tests reach those checks. The memory is host memory; the checks read
// only device(), and nothing must be computed on it.
#pragma once

#include "tensor/tensor.h"

namespace glassbox::testing {

// A tensor whose device() is `device`, backed by host memory.
Tensor tensor_claiming(Device device, Shape shape, DType dtype = DType::kFloat32);

}  // namespace glassbox::testing
