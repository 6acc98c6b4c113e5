// tests/support/bits.h: the stored bits of a 16-bit tensor, for tests that
// compare float16 and bfloat16 values bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor/context.h"
#include "tensor/copy.h"
#include "tensor/tensor.h"

namespace glassbox::testing {

// The bits of a 16-bit tensor on the context's device or the host; waits for the device.
inline std::vector<uint16_t> read_16_bit(Context& ctx, const Tensor& tensor) {
  Context cpu = Context::cpu();
  const Tensor host = cpu.allocate(tensor.shape(), tensor.dtype(), MemoryCategory::kParameters);
  copy(ctx, tensor, host);
  ctx.synchronize();
  std::vector<uint16_t> bits(static_cast<size_t>(tensor.numel()));
  std::memcpy(bits.data(), host.raw(), host.bytes());
  return bits;
}

}  // namespace glassbox::testing
