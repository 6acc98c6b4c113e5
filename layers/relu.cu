// layers/relu.cu: ReLU's backward, dx = dy * [y > 0], where cuDNN's
// activation backward would read y twice (as y and as x: Note [ReLU backward
// from y] in layers/relu_cuda.cpp); and a residual add with its ReLU, y =
// max(0, a + b), where cuDNN would make two passes (cudnnOpTensor, then
// cudnnActivationForward). Memory-bound: each thread moves 16 bytes of each
// tensor per step where the count and the pointers allow (the memory plan
// aligns every tensor to 256 bytes), else one value.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

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

// One value: the mask needs no arithmetic, so in kWrite dx is dy's bits or
// zero, exact in any type.
template <typename Type, bool kAdd>
__device__ void relu_backward_one(const typename Type::Storage* y, const typename Type::Storage* dy,
                                  typename Type::Storage* dx, int64_t i) {
  const float g = Type::widen(y[i]) > 0.0f ? Type::widen(dy[i]) : 0.0f;
  dx[i] = Type::narrow(kAdd ? Type::widen(dx[i]) + g : g);
}

// 16 bytes of each tensor per thread and step: kPack values.
template <typename Type, bool kAdd>
__global__ void relu_backward_packed(const uint4* __restrict__ y, const uint4* __restrict__ dy, uint4* __restrict__ dx,
                                     int64_t packs) {
  using Storage = typename Type::Storage;
  constexpr int kPack = static_cast<int>(sizeof(uint4) / sizeof(Storage));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    uint4 yv = y[p], gv = dy[p], out = kAdd ? dx[p] : uint4{};
    const auto* ys = reinterpret_cast<const Storage*>(&yv);
    const auto* gs = reinterpret_cast<const Storage*>(&gv);
    auto* os = reinterpret_cast<Storage*>(&out);
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      const float g = Type::widen(ys[k]) > 0.0f ? Type::widen(gs[k]) : 0.0f;
      os[k] = Type::narrow(kAdd ? Type::widen(os[k]) + g : g);
    }
    dx[p] = out;
  }
}

template <typename Type, bool kAdd>
__global__ void relu_backward_each(const typename Type::Storage* __restrict__ y,
                                   const typename Type::Storage* __restrict__ dy,
                                   typename Type::Storage* __restrict__ dx, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    relu_backward_one<Type, kAdd>(y, dy, dx, i);
  }
}

// y = max(0, a + b): the sum in float, rounded once; a NaN sum gives 0.
template <typename Type>
__device__ typename Type::Storage add_relu_one(typename Type::Storage a, typename Type::Storage b) {
  const float sum = Type::widen(a) + Type::widen(b);
  return Type::narrow(sum > 0.0f ? sum : 0.0f);
}

template <typename Type>
__global__ void add_relu_packed(const uint4* __restrict__ a, const uint4* __restrict__ b, uint4* __restrict__ y,
                                int64_t packs) {
  using Storage = typename Type::Storage;
  constexpr int kPack = static_cast<int>(sizeof(uint4) / sizeof(Storage));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs; p += stride) {
    uint4 av = a[p], bv = b[p], out;
    const auto* as = reinterpret_cast<const Storage*>(&av);
    const auto* bs = reinterpret_cast<const Storage*>(&bv);
    auto* os = reinterpret_cast<Storage*>(&out);
#pragma unroll
    for (int k = 0; k < kPack; ++k) os[k] = add_relu_one<Type>(as[k], bs[k]);
    y[p] = out;
  }
}

template <typename Type>
__global__ void add_relu_each(const typename Type::Storage* __restrict__ a, const typename Type::Storage* __restrict__ b,
                              typename Type::Storage* __restrict__ y, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    y[i] = add_relu_one<Type>(a[i], b[i]);
  }
}

constexpr int kThreads = 256;

int blocks_for(int64_t count) { return static_cast<int>(std::min<int64_t>((count + kThreads - 1) / kThreads, 65536)); }

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(uint4) == 0; }

template <typename Type, bool kAdd>
void launch(const void* y, const void* dy, void* dx, int64_t count, cudaStream_t stream) {
  using Storage = typename Type::Storage;
  constexpr int64_t kPack = sizeof(uint4) / sizeof(Storage);
  if (count % kPack == 0 && aligned_16(y) && aligned_16(dy) && aligned_16(dx)) {
    const int64_t packs = count / kPack;
    relu_backward_packed<Type, kAdd><<<blocks_for(packs), kThreads, 0, stream>>>(
        static_cast<const uint4*>(y), static_cast<const uint4*>(dy), static_cast<uint4*>(dx), packs);
  } else {
    relu_backward_each<Type, kAdd><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const Storage*>(y), static_cast<const Storage*>(dy), static_cast<Storage*>(dx), count);
  }
}

template <typename Type>
void launch(const void* y, const void* dy, void* dx, int64_t count, bool add, cudaStream_t stream) {
  if (add) {
    launch<Type, true>(y, dy, dx, count, stream);
  } else {
    launch<Type, false>(y, dy, dx, count, stream);
  }
}

template <typename Type>
void launch_add_relu_typed(const void* a, const void* b, void* y, int64_t count, cudaStream_t stream) {
  using Storage = typename Type::Storage;
  constexpr int64_t kPack = sizeof(uint4) / sizeof(Storage);
  if (count % kPack == 0 && aligned_16(a) && aligned_16(b) && aligned_16(y)) {
    const int64_t packs = count / kPack;
    add_relu_packed<Type><<<blocks_for(packs), kThreads, 0, stream>>>(
        static_cast<const uint4*>(a), static_cast<const uint4*>(b), static_cast<uint4*>(y), packs);
  } else {
    add_relu_each<Type><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const Storage*>(a), static_cast<const Storage*>(b), static_cast<Storage*>(y), count);
  }
}

}  // namespace

void launch_add_relu(const void* a, const void* b, void* y, int64_t count, DType values, cudaStream_t stream) {
  if (count == 0) return;  // a grid of no blocks is a launch error
  switch (values) {
    case DType::kFloat32: launch_add_relu_typed<Float32>(a, b, y, count, stream); break;
    case DType::kFloat16: launch_add_relu_typed<Float16>(a, b, y, count, stream); break;
    case DType::kBFloat16: launch_add_relu_typed<BFloat16>(a, b, y, count, stream); break;
    default: throw Error(cat("launch_add_relu: no kernel for ", name_of(values), " values"));
  }
  CUDA_CHECK_LAUNCH();
}

void launch_relu_backward(const void* y, const void* dy, void* dx, int64_t count, DType values, bool add,
                          cudaStream_t stream) {
  if (count == 0) return;  // a grid of no blocks is a launch error
  switch (values) {
    case DType::kFloat32: launch<Float32>(y, dy, dx, count, add, stream); break;
    case DType::kFloat16: launch<Float16>(y, dy, dx, count, add, stream); break;
    case DType::kBFloat16: launch<BFloat16>(y, dy, dx, count, add, stream); break;
    default: throw Error(cat("launch_relu_backward: no kernel for ", name_of(values), " values"));
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace glassbox
