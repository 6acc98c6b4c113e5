// tensor/device_peaks_cuda.cpp: the roofline's GPU probes (tensor/device_peaks.h):
// a cuBLAS SGEMM and a device-to-device copy, timed with CUDA events on the
// context's stream, best of a few (the first also warms cuBLAS up).
#include <algorithm>
#include <memory>

#include "tensor/context_cuda.h"
#include "tensor/cuda_entry.h"

namespace glassbox::cuda_entry {
namespace {

struct DeviceFree {
  void operator()(void* ptr) const noexcept { (void)cudaFree(ptr); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

// A buffer of `bytes`, filled with a small nonzero float pattern (0x3c3c3c3c,
// about 0.0115): tensor cores draw less power, and may run faster, on zeros.
DeviceBuffer device_buffer(const CudaResources& resources, size_t bytes) {
  void* ptr = nullptr;
  CUDA_CHECK(cudaMalloc(&ptr, bytes));
  DeviceBuffer buffer(ptr);
  CUDA_CHECK(cudaMemsetAsync(ptr, 0x3c, bytes, resources.stream.get()));
  return buffer;
}

// Milliseconds `work` takes on the stream, by two events around it.
template <typename Work>
float timed_ms(const CudaResources& resources, Work&& work) {
  cudaEvent_t start_event = nullptr, end_event = nullptr;
  CUDA_CHECK(cudaEventCreate(&start_event));
  CudaEvent start(start_event);
  CUDA_CHECK(cudaEventCreate(&end_event));
  CudaEvent end(end_event);
  CUDA_CHECK(cudaEventRecord(start.get(), resources.stream.get()));
  work();
  CUDA_CHECK(cudaEventRecord(end.get(), resources.stream.get()));
  CUDA_CHECK(cudaEventSynchronize(end.get()));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

}  // namespace

double measure_gemm_flops(const CudaResources& resources, int n, int repeats) {
  CUDA_CHECK(cudaSetDevice(resources.device));
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(float);
  const DeviceBuffer a = device_buffer(resources, bytes), b = device_buffer(resources, bytes),
                     c = device_buffer(resources, bytes);
  const float alpha = 1.0f, beta = 0.0f;
  double best = 0.0;
  for (int i = 0; i < repeats; ++i) {
    const float ms = timed_ms(resources, [&] {
      CUBLAS_CHECK(cublasSgemm(resources.cublas.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                               static_cast<const float*>(a.get()), n, static_cast<const float*>(b.get()), n, &beta,
                               static_cast<float*>(c.get()), n));
    });
    best = std::max(best, 2.0 * n * static_cast<double>(n) * n / (ms / 1e3));
  }
  return best;
}

double measure_copy_bytes(const CudaResources& resources, size_t bytes, int repeats) {
  CUDA_CHECK(cudaSetDevice(resources.device));
  const DeviceBuffer src = device_buffer(resources, bytes), dst = device_buffer(resources, bytes);
  double best = 0.0;
  for (int i = 0; i < repeats; ++i) {
    const float ms = timed_ms(resources, [&] {
      CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, resources.stream.get()));
    });
    best = std::max(best, 2.0 * static_cast<double>(bytes) / (ms / 1e3));
  }
  return best;
}

}  // namespace glassbox::cuda_entry
