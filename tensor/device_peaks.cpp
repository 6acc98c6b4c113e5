// tensor/device_peaks.cpp: the datasheet table and the CPU probes; the GPU
// probes are in tensor/device_peaks_cuda.cpp (cuda_entry).
#include "tensor/device_peaks.h"

#include <Eigen/Dense>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <new>
#include <vector>

#include "tensor/cpu_blas.h"
#include "tensor/cuda_entry.h"
#include "tensor/eigen_maps.h"
#include "tensor/error.h"
#include "tensor/product.h"

namespace glassbox {
namespace {

constexpr double T = 1e12;  // FLOP/s or bytes/s
// Sources: NVIDIA's product datasheets (nvidia.com), dense figures (the TF32
// tensor-core numbers printed "with sparsity" halved). Ordered so that a more
// specific name comes before one it contains.
constexpr std::array kTable = {
    // H100 datasheet (SXM5 / PCIe): FP32 67 / 51 TFLOPS, TF32 989 / 756 sparse, 3.35 / 2.0 TB/s.
    DevicePeak{"NVIDIA H100 PCIe", "H100 PCIe", 51 * T, 378 * T, 2.0 * T},
    DevicePeak{"NVIDIA H100 NVL", "H100 NVL", 60 * T, 417.5 * T, 3.9 * T},  // NVL column: 835 sparse, 3.9 TB/s
    DevicePeak{"NVIDIA H100 SXM", "H100", 67 * T, 494.5 * T, 3.35 * T},
    // H200 datasheet (SXM): FP32 67 TFLOPS, TF32 989 sparse, 4.8 TB/s.
    DevicePeak{"NVIDIA H200", "H200", 67 * T, 494.5 * T, 4.8 * T},
    // A100 datasheet: FP32 19.5 TFLOPS, TF32 156 (dense); 40GB 1.555 TB/s,
    // 80GB SXM 2.039 TB/s, 80GB PCIe 1.935 TB/s.
    DevicePeak{"NVIDIA A100 SXM 80GB", "A100-SXM4-80GB", 19.5 * T, 156 * T, 2.039 * T},
    DevicePeak{"NVIDIA A100 SXM 40GB", "A100-SXM4-40GB", 19.5 * T, 156 * T, 1.555 * T},
    DevicePeak{"NVIDIA A100 PCIe 80GB", "A100 80GB PCIe", 19.5 * T, 156 * T, 1.935 * T},
    DevicePeak{"NVIDIA A100 PCIe 40GB", "A100-PCIE-40GB", 19.5 * T, 156 * T, 1.555 * T},
    // V100 datasheet: FP32 15.7 (SXM2) / 14 (PCIe) TFLOPS, 900 GB/s; no TF32.
    DevicePeak{"NVIDIA V100 SXM2", "V100-SXM2", 15.7 * T, 15.7 * T, 0.9 * T},
    DevicePeak{"NVIDIA V100 PCIe", "V100-PCIE", 14 * T, 14 * T, 0.9 * T},
    // L40S datasheet: FP32 91.6 TFLOPS, TF32 366 sparse, 864 GB/s.
    DevicePeak{"NVIDIA L40S", "L40S", 91.6 * T, 183 * T, 0.864 * T},
    // L4 datasheet: FP32 30.3 TFLOPS, TF32 120 sparse, 300 GB/s.
    DevicePeak{"NVIDIA L4", "L4", 30.3 * T, 60 * T, 0.3 * T},
    // RTX 4090 (Ada Lovelace architecture whitepaper): FP32 82.6 TFLOPS,
    // TF32 82.6 dense (165.2 sparse), 1008 GB/s.
    DevicePeak{"NVIDIA GeForce RTX 4090", "RTX 4090", 82.6 * T, 82.6 * T, 1.008 * T},
    // A10 datasheet: FP32 31.2 TFLOPS, TF32 125 sparse, 600 GB/s.
    DevicePeak{"NVIDIA A10", "A10", 31.2 * T, 62.5 * T, 0.6 * T},
    // T4 datasheet: FP32 8.1 TFLOPS, 320 GB/s; no TF32.
    DevicePeak{"NVIDIA T4", "T4", 8.1 * T, 8.1 * T, 0.32 * T},
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Whether `piece` occurs in `text` not followed by a letter or digit.
bool contains_word(const std::string& text, const std::string& piece) {
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) {
    const size_t end = at + piece.size();
    if (end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]))) return true;
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr int kGemmSize = 1024;          // 2 * 1024^3 FLOP: tens of milliseconds on a few cores
constexpr size_t kCopyBytes = 256 << 20;  // larger than any CPU's last-level cache
// Best of: the first also pays for page faults and thread start-up, and on a
// shared machine any one run may lose its cores for a while.
constexpr int kRepeats = 5;

MeasuredPeak measure_cpu() {
  // The layers keep Eigen on one thread and split their work over the OpenMP
  // threads themselves (Note [Eigen's own threads], tensor/eigen_maps.h); the
  // peak is what every core together does, so Eigen gets every thread here.
  // On OpenBLAS (cmake/CpuBlas.cmake) the product, called outside any
  // parallel region, takes every OpenMP thread by itself.
  struct EigenThreads {
    int before = Eigen::nbThreads();
    EigenThreads() { Eigen::setNbThreads(omp_get_max_threads()); }
    ~EigenThreads() { Eigen::setNbThreads(before); }
  } threads;
  MeasuredPeak peak;
  // The copy's buffers first, the largest allocation: where the memory left
  // beside a run cannot hold them, nothing has run yet.
  const int64_t count = static_cast<int64_t>(kCopyBytes / sizeof(float));
  std::vector<float> src(static_cast<size_t>(count), 1.0f), dst(static_cast<size_t>(count));
  const RowMatrix a = RowMatrix::Random(kGemmSize, kGemmSize);
  const RowMatrix b = RowMatrix::Random(kGemmSize, kGemmSize);
  RowMatrix c(kGemmSize, kGemmSize);
  const double gemm_flops = 2.0 * kGemmSize * kGemmSize * kGemmSize;
  for (int i = 0; i < kRepeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    product_into(c, a, b);  // as the layers call it (Note [Products without Eigen's zeroing pass])
    peak.flops_per_s = std::max(peak.flops_per_s, gemm_flops / seconds_since(start));
  }
  // A parallel copy, as the layers' OpenMP loops stream memory on every core.
  for (int i = 0; i < kRepeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < count; ++j) dst[static_cast<size_t>(j)] = src[static_cast<size_t>(j)];
    peak.bytes_per_s = std::max(peak.bytes_per_s, 2.0 * static_cast<double>(kCopyBytes) / seconds_since(start));
  }
  peak.how = cat(cpu_gemm_name(), " GEMM ", kGemmSize, "^3, copy ", kCopyBytes >> 20, " MiB");
  return peak;
}

}  // namespace

std::optional<DevicePeak> find_device_peak(std::string_view device_name) {
  const std::string name = lower(device_name);
  for (const DevicePeak& row : kTable) {
    if (contains_word(name, lower(row.match))) return row;
  }
  return std::nullopt;
}

MeasuredPeak measure_peak(Context& ctx) {
  if (!ctx.is_cuda()) {
    try {
      return measure_cpu();
    } catch (const std::bad_alloc&) {  // the run's own tensors are still held: say which allocation failed
      throw OutOfMemoryError(cat("out of host memory measuring the CPU's peak for the roofline (three ", kGemmSize,
                                 "x", kGemmSize, " matrices and two ", kCopyBytes >> 20, " MiB buffers, ",
                                 (3 * kGemmSize * kGemmSize * sizeof(float) + 2 * kCopyBytes) >> 20, " MiB)"));
    }
  }
  MeasuredPeak peak;
  constexpr int kSgemmSize = 4096;
  constexpr size_t kDeviceCopyBytes = size_t{1} << 30;
  peak.flops_per_s = cuda_entry::measure_gemm_flops(*ctx.cuda_state(), kSgemmSize, kRepeats);
  peak.bytes_per_s = cuda_entry::measure_copy_bytes(*ctx.cuda_state(), kDeviceCopyBytes, kRepeats);
  peak.how = cat("cuBLAS SGEMM ", kSgemmSize, "^3 (", name_of(ctx.precision()), "), device copy ",
                 kDeviceCopyBytes >> 20, " MiB");
  return peak;
}

RooflinePeak choose_peak(std::string_view device_name, Precision precision, const MeasuredPeak& measured) {
  RooflinePeak peak;
  peak.measured = measured;
  if (const std::optional<DevicePeak> row = find_device_peak(device_name)) {
    peak.flops_per_s = precision == Precision::kTf32 ? row->tf32_flops_per_s : row->fp32_flops_per_s;
    peak.bytes_per_s = row->bytes_per_s;
    peak.source = cat("table: ", row->name, " (datasheet, ", precision == Precision::kTf32 ? "TF32" : "FP32", ")");
  } else {
    peak.flops_per_s = measured.flops_per_s;
    peak.bytes_per_s = measured.bytes_per_s;
    peak.source = cat("measured: ", measured.how);
  }
  return peak;
}

}  // namespace glassbox
