// layers/relu.cu: ReLU's backward, dx = dy * [y > 0], where cuDNN's
// activation backward would read y twice (as y and as x: Note [ReLU backward
// from y] in layers/relu_cuda.cpp); a residual add with its ReLU, y =
// max(0, a + b), where cuDNN would make two passes (cudnnOpTensor, then
// cudnnActivationForward); and the plain add y = a + b, since cuDNN's
// cudnnOpTensor has no bfloat16 path (its argument checks in libcudnn_ops
// branch on float, double and half data only); and a layer's bias add, with
// its ReLU where the layer's is fused (Note [A bias add by Glassbox's
// kernel], layers/bias_add_plan.h). Memory-bound: each thread moves 16 bytes of each
// tensor per step where the pointers allow (the memory plan aligns every
// tensor to 256 bytes), and the last count % pack values one at a time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "layers/relu_kernels_cuda.h"
#include "tensor/checks_cuda.h"

namespace glassbox {
namespace {

struct Float32 {
  using Storage = float;
  __device__ static float widen(float v) { return v; }
  __device__ static float narrow(float v) { return v; }
};
struct Float16 {
  using Storage = __half;
  __device__ static float widen(__half v) { return __half2float(v); }
  __device__ static __half narrow(float v) { return __float2half_rn(v); }
};
struct BFloat16 {
  using Storage = __nv_bfloat16;
  __device__ static float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 narrow(float v) { return __float2bfloat16_rn(v); }
};

// The two operations, on one value each, in float. out is what dx or y holds
// (read only by an op that kReadsOut).
// dx = dy where y > 0, else 0 (+ dx where kAdd). In kWrite the mask needs
// no arithmetic: dx is dy's value or zero, exact in any type.
template <bool kAdd>
struct ReluBackward {
  static constexpr bool kReadsOut = kAdd;
  __device__ static float apply(float y, float dy, float out) {
    const float g = y > 0.0f ? dy : 0.0f;
    return kAdd ? out + g : g;
  }
};
// y = a + b, rounded once; a NaN propagates.
struct Add {
  static constexpr bool kReadsOut = false;
  __device__ static float apply(float a, float b, float) { return a + b; }
};
// y = max(0, a + b): the sum rounded once; a NaN sum stays NaN (Note [A
// ReLU keeps a NaN], layers/relu.h): only a sum known not positive gives 0.
struct AddRelu {
  static constexpr bool kReadsOut = false;
  __device__ static float apply(float a, float b, float) {
    const float sum = a + b;
    return sum <= 0.0f ? 0.0f : sum;
  }
};

// out[i] = Op(a[i], b[i], out[i]) over 16 bytes of each tensor per thread and
// step: kPack values. `glassbox kernels` files the kernels as elementwise by
// name (tensor/kernel_names.cpp); the op is the second template argument. No __restrict__: out may be an input (batch norm's
// fused residual add writes y = relu(y + z) in place).
template <typename Type, typename Op>
__global__ void elementwise_packed_kernel(const uint4* a, const uint4* b, uint4* out, int64_t packs) {
  using Storage = typename Type::Storage;
  constexpr int kPack = static_cast<int>(sizeof(uint4) / sizeof(Storage));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    uint4 av = a[p], bv = b[p], ov = Op::kReadsOut ? out[p] : uint4{};
    const auto* as = reinterpret_cast<const Storage*>(&av);
    const auto* bs = reinterpret_cast<const Storage*>(&bv);
    auto* os = reinterpret_cast<Storage*>(&ov);
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      os[k] = Type::narrow(Op::apply(Type::widen(as[k]), Type::widen(bs[k]), Type::widen(os[k])));
    }
    out[p] = ov;
  }
}

// The same one value per thread and step, for a tail under a pack and pointers that do not pack.
template <typename Type, typename Op>
__global__ void elementwise_each_kernel(const typename Type::Storage* a, const typename Type::Storage* b,
                                 typename Type::Storage* out, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float old = Op::kReadsOut ? Type::widen(out[i]) : 0.0f;
    out[i] = Type::narrow(Op::apply(Type::widen(a[i]), Type::widen(b[i]), old));
  }
}

constexpr int kThreads = 256;

int blocks_for(int64_t count) { return static_cast<int>(std::min<int64_t>((count + kThreads - 1) / kThreads, 65536)); }

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(uint4) == 0; }

template <typename Type, typename Op>
void launch_typed(const void* a, const void* b, void* out, int64_t count, cudaStream_t stream) {
  using Storage = typename Type::Storage;
  constexpr int64_t kPack = sizeof(uint4) / sizeof(Storage);
  // Whole packs where the pointers allow, then the tail (under kPack values)
  // one value per thread.
  const int64_t packs = aligned_16(a) && aligned_16(b) && aligned_16(out) ? count / kPack : 0;
  if (packs > 0) {
    elementwise_packed_kernel<Type, Op><<<blocks_for(packs), kThreads, 0, stream>>>(
        static_cast<const uint4*>(a), static_cast<const uint4*>(b), static_cast<uint4*>(out), packs);
  }
  const int64_t done = packs * kPack;
  if (done < count) {
    elementwise_each_kernel<Type, Op><<<blocks_for(count - done), kThreads, 0, stream>>>(
        static_cast<const Storage*>(a) + done, static_cast<const Storage*>(b) + done,
        static_cast<Storage*>(out) + done, count - done);
  }
}

template <typename Op>
void launch(const char* what, const void* a, const void* b, void* out, int64_t count, DType values,
            cudaStream_t stream) {
  if (count == 0) return;  // a grid of no blocks is a launch error
  switch (values) {
    case DType::kFloat32: launch_typed<Float32, Op>(a, b, out, count, stream); break;
    case DType::kFloat16: launch_typed<Float16, Op>(a, b, out, count, stream); break;
    case DType::kBFloat16: launch_typed<BFloat16, Op>(a, b, out, count, stream); break;
    default: throw Error(cat(what, ": no kernel for ", name_of(values), " values"));
  }
  CUDA_CHECK_LAUNCH();
}

// y = y + bias[channel], with the ReLU where kRelu: Add's or AddRelu's sum,
// rounded once. The bias is read value by value, from cache after its first
// reads.
template <typename Type, bool kRelu>
__device__ typename Type::Storage biased(typename Type::Storage y, typename Type::Storage bias) {
  using Op = std::conditional_t<kRelu, AddRelu, Add>;
  return Type::narrow(Op::apply(Type::widen(y), Type::widen(bias), 0.0f));
}

// 16 bytes of y per thread and step; each pack's first channel found once,
// the rest stepped (BiasCursor).
template <typename Type, bool kRelu>
__global__ void bias_add_packed_kernel(uint4* y, const typename Type::Storage* bias, int64_t packs, int64_t run,
                                       int64_t channels) {
  using Storage = typename Type::Storage;
  constexpr int kPack = static_cast<int>(sizeof(uint4) / sizeof(Storage));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    BiasCursor at = bias_cursor_at(p * kPack, run, channels);
    uint4 v = y[p];
    auto* values = reinterpret_cast<Storage*>(&v);
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      values[k] = biased<Type, kRelu>(values[k], bias[at.channel]);
      step_bias_cursor(at, run, channels);
    }
    y[p] = v;
  }
}

// One value per thread and step, values first .. first + count - 1 of y: the
// tail under a pack, or all of a y that does not align to packs.
template <typename Type, bool kRelu>
__global__ void bias_add_each_kernel(typename Type::Storage* y, const typename Type::Storage* bias, int64_t first,
                                     int64_t count, int64_t run, int64_t channels) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const int64_t at = first + i;
    y[at] = biased<Type, kRelu>(y[at], bias[bias_channel_of(at, run, channels)]);
  }
}

template <typename Type, bool kRelu>
void launch_bias_typed(void* y, const void* bias, const BiasAddPlan& plan, cudaStream_t stream) {
  using Storage = typename Type::Storage;
  const auto* b = static_cast<const Storage*>(bias);
  const int64_t packs = aligned_16(y) ? plan.count / plan.pack : 0;
  if (packs > 0) {
    bias_add_packed_kernel<Type, kRelu><<<blocks_for(packs), kThreads, 0, stream>>>(static_cast<uint4*>(y), b, packs,
                                                                                     plan.run, plan.channels);
  }
  const int64_t done = packs * plan.pack;
  if (done < plan.count) {
    bias_add_each_kernel<Type, kRelu><<<blocks_for(plan.count - done), kThreads, 0, stream>>>(
        static_cast<Storage*>(y), b, done, plan.count - done, plan.run, plan.channels);
  }
}

template <typename Type>
void launch_bias(void* y, const void* bias, const BiasAddPlan& plan, bool relu, cudaStream_t stream) {
  if (sizeof(uint4) / sizeof(typename Type::Storage) != static_cast<size_t>(plan.pack)) {
    throw Error(cat("launch_bias_add: a plan for packs of ", plan.pack, " values, for values of ",
                    sizeof(typename Type::Storage), " bytes"));
  }
  if (relu) {
    launch_bias_typed<Type, true>(y, bias, plan, stream);
  } else {
    launch_bias_typed<Type, false>(y, bias, plan, stream);
  }
}

}  // namespace

void launch_bias_add(void* y, const void* bias, const BiasAddPlan& plan, DType values, bool relu,
                     cudaStream_t stream) {
  if (plan.count == 0) return;  // a grid of no blocks is a launch error
  switch (values) {
    case DType::kFloat32: launch_bias<Float32>(y, bias, plan, relu, stream); break;
    case DType::kFloat16: launch_bias<Float16>(y, bias, plan, relu, stream); break;
    case DType::kBFloat16: launch_bias<BFloat16>(y, bias, plan, relu, stream); break;
    default: throw Error(cat("launch_bias_add: no kernel for ", name_of(values), " values"));
  }
  CUDA_CHECK_LAUNCH();
}

void launch_add(const void* a, const void* b, void* y, int64_t count, DType values, cudaStream_t stream) {
  launch<Add>("launch_add", a, b, y, count, values, stream);
}

void launch_add_relu(const void* a, const void* b, void* y, int64_t count, DType values, cudaStream_t stream) {
  launch<AddRelu>("launch_add_relu", a, b, y, count, values, stream);
}

void launch_relu_backward(const void* y, const void* dy, void* dx, int64_t count, DType values, bool add,
                          cudaStream_t stream) {
  if (add) {
    launch<ReluBackward<true>>("launch_relu_backward", y, dy, dx, count, values, stream);
  } else {
    launch<ReluBackward<false>>("launch_relu_backward", y, dy, dx, count, values, stream);
  }
}

}  // namespace glassbox
