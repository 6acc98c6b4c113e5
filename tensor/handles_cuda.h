// tensor/handles_cuda.h: move-only owners for every CUDA, cuDNN and cuBLAS
// object, from one template. Destructors never throw: a failed destroy at
// teardown is ignored (there is nothing useful left to do with it).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <utility>

#include "tensor/checks_cuda.h"
#include "tensor/dtype.h"

namespace glassbox {

template <typename Handle, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  void reset() {
    if (handle_ != Handle{}) (void)Destroy(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

using CudaStream = UniqueHandle<cudaStream_t, cudaStreamDestroy>;
using CudaEvent = UniqueHandle<cudaEvent_t, cudaEventDestroy>;
using CudaBuffer = UniqueHandle<void*, cudaFree>;  // from cudaMalloc
using CudnnHandle = UniqueHandle<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = UniqueHandle<cublasHandle_t, cublasDestroy>;
using CublasLtHandle = UniqueHandle<cublasLtHandle_t, cublasLtDestroy>;
using LtMatmulDescriptor = UniqueHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtMatrixLayout = UniqueHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = UniqueHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;
using TensorDescriptor = UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = UniqueHandle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    UniqueHandle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = UniqueHandle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor =
    UniqueHandle<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;
using LrnDescriptor = UniqueHandle<cudnnLRNDescriptor_t, cudnnDestroyLRNDescriptor>;
using DropoutDescriptor = UniqueHandle<cudnnDropoutDescriptor_t, cudnnDestroyDropoutDescriptor>;

// Creates a descriptor with its cudnnCreate* function, checked:
//   auto desc = make_descriptor<TensorDescriptor>(cudnnCreateTensorDescriptor);
template <typename Owner, typename Create>
Owner make_descriptor(Create create) {
  decltype(Owner().get()) raw{};
  CUDNN_CHECK(create(&raw));
  return Owner(raw);
}

// cuDNN's and the CUDA libraries' names for a float element type: float32,
// float16 or bfloat16 (Error for any other: int32 tensors never reach them).
cudnnDataType_t cudnn_data_type(DType dtype);
cudaDataType_t cuda_data_type(DType dtype);

// A packed NCHW tensor descriptor of float32 (or `dtype`: float16, bfloat16).
TensorDescriptor make_nchw_descriptor(int n, int c, int h, int w, DType dtype = DType::kFloat32);

}  // namespace glassbox
