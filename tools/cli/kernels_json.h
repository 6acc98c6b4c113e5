// tools/cli/kernels_json.h: `glassbox kernels NET --json FILE`, the map from
// one training step's layers and passes to the GPU kernels they ran
// (graph/kernel_map.h). Schema "glassbox.kernels":
//   {"kind": "glassbox.kernels", "network", "batch", "device", "device_name",
//    "runtime": {RuntimeInfo::fields(), as strings},
//    "records", "attributed_records", "gpu_ms", "attributed_ms", "unattributed_ms", "coverage",
//    "dropped_records",
//    "spans": [{"id", "layer", "type", "pass", "precision", "layout",
//               "fused_into": the layer that runs this layer's pass ("" where it runs its own),
//               "runs": the layers whose pass this one runs as well (a fused ReLU, a residual add),
//               "span_ms", "count", "gpu_ms", "share", "kernels": [KERNEL]}],
//    "families": [{"family", "count", "gpu_ms", "share"}],
//    "unattributed": [KERNEL]}
//   KERNEL: {"name" (short), "kernel" (short, uncapped: what the records share), "full_name" (the
//            first record's, demangled), "family", "count", "gpu_ms", "share"}
// The optimizer's span has type "SGD" and no precision or layout.
// tools/kernels_summary.py makes Markdown tables of it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "graph/kernel_map.h"
#include "tensor/runtime_info.h"

namespace glassbox::cli {

// What a span's layer computes in (precision_path: "bf16", "fp32, staged
// from bf16") and its layout_path; "" for the optimizer's span.
std::string span_precision(const SpanKernels& span, const Graph& graph);
std::string span_layout(const SpanKernels& span, const Graph& graph);

// The layer that runs this span's layer's pass as part of its own (a ReLU
// fused into its batch norm: that batch norm's name); "" where the layer
// runs its pass itself, and for the optimizer.
std::string fused_host(const SpanKernels& span, const Graph& graph);

nlohmann::json kernels_json(const KernelMap& map, const Graph& graph, const RuntimeInfo& info,
                            const std::string& network, int batch, uint64_t dropped);

}  // namespace glassbox::cli
