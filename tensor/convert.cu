// tensor/convert.cu: float32 <-> float16 / bfloat16 on the GPU, a grid-stride
// kernel per direction and type, behind cuda_entry::convert (tensor/convert.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "tensor/checks_cuda.h"
#include "tensor/context_cuda.h"
#include "tensor/cuda_entry.h"

namespace glassbox {
namespace {

// __float2half_rn and __float2bfloat16_rn (cvt.rn.f16.f32, cvt.rn.bf16.f32)
// round to nearest even as the CPU does: float16 overflows to +-inf from
// 65520 on, subnormals are kept, and the sign of zero stays. A NaN becomes the
// canonical NaN 0x7fff, sign dropped, where the CPU keeps the sign (Note [NaN
// bits] in tensor/convert.cpp). Widening is exact on both devices.
struct Float16 {
  __device__ static uint16_t narrow(float value) { return __half_as_ushort(__float2half_rn(value)); }
  __device__ static float widen(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
};
struct BFloat16 {
  __device__ static uint16_t narrow(float value) { return __bfloat16_as_ushort(__float2bfloat16_rn(value)); }
  __device__ static float widen(uint16_t bits) { return __bfloat162float(__ushort_as_bfloat16(bits)); }
};

template <typename Type>
__global__ void narrow_kernel(const float* __restrict__ src, uint16_t* __restrict__ dst, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = Type::narrow(src[i]);
  }
}

template <typename Type>
__global__ void widen_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = Type::widen(src[i]);
  }
}

template <typename Type>
__global__ void accumulate_widened_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] += Type::widen(src[i]);
  }
}

__global__ void scale_kernel(float* __restrict__ data, int64_t n, float factor, const float* device_factor) {
  const float f = device_factor != nullptr ? *device_factor : factor;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    data[i] *= f;
  }
}

constexpr int kThreads = 256;

// Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
int blocks_for(int64_t count) { return static_cast<int>(std::min<int64_t>((count + kThreads - 1) / kThreads, 65536)); }

}  // namespace

namespace cuda_entry {

void scale(const CudaResources& resources, float* data, int64_t count, float factor, const float* device_factor) {
  if (count == 0) return;
  scale_kernel<<<blocks_for(count), kThreads, 0, resources.stream.get()>>>(data, count, factor, device_factor);
  CUDA_CHECK_LAUNCH();
}

void accumulate_widened(const CudaResources& resources, const void* src, DType src_dtype, float* dst,
                        int64_t count) {
  if (count == 0) return;  // a grid of no blocks is a launch error
  cudaStream_t stream = resources.stream.get();
  const auto* halves = static_cast<const uint16_t*>(src);
  if (src_dtype == DType::kFloat16) {
    accumulate_widened_kernel<Float16><<<blocks_for(count), kThreads, 0, stream>>>(halves, dst, count);
  } else if (src_dtype == DType::kBFloat16) {
    accumulate_widened_kernel<BFloat16><<<blocks_for(count), kThreads, 0, stream>>>(halves, dst, count);
  } else {
    throw Error(cat("cuda_entry::accumulate_widened: no kernel from ", name_of(src_dtype)));
  }
  CUDA_CHECK_LAUNCH();
}


void convert(const CudaResources& resources, const void* src, DType src_dtype, void* dst, DType dst_dtype,
             int64_t count) {
  if (count == 0) return;  // a grid of no blocks is a launch error
  const int blocks = blocks_for(count);
  cudaStream_t stream = resources.stream.get();
  const auto* floats = static_cast<const float*>(src);
  const auto* halves = static_cast<const uint16_t*>(src);
  if (src_dtype == DType::kFloat32 && dst_dtype == DType::kFloat16) {
    narrow_kernel<Float16><<<blocks, kThreads, 0, stream>>>(floats, static_cast<uint16_t*>(dst), count);
  } else if (src_dtype == DType::kFloat32 && dst_dtype == DType::kBFloat16) {
    narrow_kernel<BFloat16><<<blocks, kThreads, 0, stream>>>(floats, static_cast<uint16_t*>(dst), count);
  } else if (src_dtype == DType::kFloat16 && dst_dtype == DType::kFloat32) {
    widen_kernel<Float16><<<blocks, kThreads, 0, stream>>>(halves, static_cast<float*>(dst), count);
  } else if (src_dtype == DType::kBFloat16 && dst_dtype == DType::kFloat32) {
    widen_kernel<BFloat16><<<blocks, kThreads, 0, stream>>>(halves, static_cast<float*>(dst), count);
  } else {
    // glassbox::convert checks the pair first; this guards the entry point itself.
    throw Error(cat("cuda_entry::convert: no kernel from ", name_of(src_dtype), " to ", name_of(dst_dtype)));
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace cuda_entry
}  // namespace glassbox
