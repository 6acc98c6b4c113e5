// tensor/runtime_info.h: what a result was measured on: the device, driver and
// library versions, the CPU. Printed with every benchmark and report.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor/context.h"

namespace glassbox {

struct RuntimeInfo {
  std::string device;        // "cpu" or "cuda:0"
  std::string device_name;   // "NVIDIA H100 80GB HBM3" or the CPU model
  std::string cpu_model;
  int cpu_threads = 0;       // OpenMP threads the CPU path uses
  std::string simd;          // vector extensions the CPU code was built with (Eigen's report)
  std::string blas;          // the kernels under Eigen's products (tensor/cpu_blas.h)
  std::string conv;          // what runs the CPU's convolutions (tensor/cpu_blas.h)
  std::string driver;        // CUDA driver version, when a GPU is used
  std::string cuda_runtime;  // versions of the libraries linked in ("" in a CPU-only build)
  std::string cudnn;
  std::string cublas;
  std::string nccl;
  std::string gpu_memory;    // total device memory
  std::string precision;     // math mode of the context
  std::string build;         // compiler and build type
  std::string commit;        // git commit the binary was built from

  // (key, value) pairs in print order, for benchmark context and reports.
  std::vector<std::pair<std::string, std::string>> fields() const;
};

RuntimeInfo runtime_info(const Context& ctx);

namespace cuda_entry {
// Fills the CUDA fields: library versions always, device fields if ctx is CUDA.
void describe(const Context& ctx, RuntimeInfo& info);
}  // namespace cuda_entry

}  // namespace glassbox
