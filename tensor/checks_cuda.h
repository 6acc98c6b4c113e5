// tensor/checks_cuda.h: one check macro per library, all the same shape
// (tensor/error.h): evaluate once, and on failure throw LibraryError with the
// expression, file:line and the library's own message.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "tensor/error.h"

#define CUDA_CHECK(expr) GLASSBOX_CHECK_STATUS(expr, cudaSuccess, cudaGetErrorString, "CUDA")
#define CUDNN_CHECK(expr) \
  GLASSBOX_CHECK_STATUS(expr, CUDNN_STATUS_SUCCESS, cudnnGetErrorString, "cuDNN")
#define CUBLAS_CHECK(expr) \
  GLASSBOX_CHECK_STATUS(expr, CUBLAS_STATUS_SUCCESS, cublasGetStatusString, "cuBLAS")
// After every kernel launch: launch errors are reported here, not at a later sync.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
