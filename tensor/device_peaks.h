// tensor/device_peaks.h: how fast a device can compute and move memory, for
// the roofline (tools/cli/roofline.h, glassbox time).
//
// Two sources, both printed: a table of NVIDIA's datasheet peaks, looked up by
// the CUDA device name, and probes measured here and now (CPU: an Eigen GEMM
// and a large copy; GPU: a cuBLAS SGEMM and a device-to-device copy). The
// roofline uses the table where the device is in it, else the probes. The
// datasheet is the ceiling the hardware promises; the probes are what one
// library call reaches, usually somewhat below it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tensor/context.h"

namespace glassbox {

// One row of the table: dense (no sparsity) figures from the datasheet.
struct DevicePeak {
  std::string_view name;      // "NVIDIA H100 SXM"
  std::string_view match;     // a piece of the CUDA device name: "H100 80GB HBM3"
  double fp32_flops_per_s;    // CUDA cores, FP32
  double tf32_flops_per_s;    // tensor cores, TF32, dense (FP32 where the GPU has no TF32)
  double bytes_per_s;         // memory bandwidth
};

// The row whose `match` occurs in `device_name` (case-insensitive, not
// followed by a letter or digit, so "L4" does not match "L40S"); the first in
// table order wins. nullopt for devices not in the table (every CPU).
std::optional<DevicePeak> find_device_peak(std::string_view device_name);

// What the probes reached on ctx's device, and how they were run.
struct MeasuredPeak {
  double flops_per_s = 0.0;  // best of a few square GEMMs, at ctx's precision
  double bytes_per_s = 0.0;  // best of a few copies: bytes read + written per second
  std::string how;           // "Eigen GEMM 1024^3, copy 256 MiB"
};
// Runs the probes (well under a second on the CPU). On a GPU it uses ctx's
// stream and cuBLAS handle, so TF32 follows ctx.precision().
MeasuredPeak measure_peak(Context& ctx);

// The peaks the roofline divides by, with both sources kept for the report.
struct RooflinePeak {
  double flops_per_s = 0.0;
  double bytes_per_s = 0.0;
  std::string source;  // "table: NVIDIA H100 SXM (datasheet)" or "measured: Eigen GEMM 1024^3, copy 256 MiB"
  MeasuredPeak measured;
};
// The table's row for device_name at `precision` if there is one, else `measured`.
RooflinePeak choose_peak(std::string_view device_name, Precision precision, const MeasuredPeak& measured);

}  // namespace glassbox
