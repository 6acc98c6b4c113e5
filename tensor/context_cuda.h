// tensor/context_cuda.h: the CUDA resources behind a CUDA Context. Only
// *_cuda.cpp and .cu files include this.
#pragma once

#include "tensor/context.h"
#include "tensor/handles_cuda.h"

namespace glassbox {

struct CudaResources {
  int device = 0;
  int major = 0, minor = 0;  // compute capability
  // Declared before the handles so that it is destroyed after them.
  CudaStream stream;
  CudaBuffer cublas_workspace;  // Note [cuBLAS's workspace]; freed after the handle
  CudnnHandle cudnn;    // one per device, bound to `stream`
  CublasHandle cublas;  // one per device, bound to `stream` and given `cublas_workspace`
  CublasLtHandle cublas_lt;  // one per device; each cublasLtMatmul is given `stream`
  cudaMemPool_t pool = nullptr;  // the device's default pool (owned by the driver)
};

// The resources of a CUDA context; throws Error for a CPU context.
CudaResources& cuda_resources(const Context& ctx);
inline cudaStream_t stream_of(const Context& ctx) { return cuda_resources(ctx).stream.get(); }
inline cudnnHandle_t cudnn_of(const Context& ctx) { return cuda_resources(ctx).cudnn.get(); }
inline cublasHandle_t cublas_of(const Context& ctx) { return cuda_resources(ctx).cublas.get(); }
inline cublasLtHandle_t cublas_lt_of(const Context& ctx) { return cuda_resources(ctx).cublas_lt.get(); }

}  // namespace glassbox
