// graph/kernel_map.h: which kernels each layer's passes ran, from one step's
// spans (graph/step_spans.h) and its kernel records (tensor/kernel_trace.h).
//
//   per span (layer and pass): its kernels by short name, each with a count and
//     total GPU time; the span's GPU time and its share of the step's;
//   per family (tensor/kernel_names.h): count, GPU time, share;
//   the unattributed records (launched outside every span: the gradients'
//     zeroing, copies of the loss), grouped the same way, with their share;
//   coverage = attributed GPU time / all GPU time.
//
// "GPU time" is the sum of the records' durations: on one stream, the time the
// GPU was busy; where kernels overlap (several streams) each counts in full,
// so shares stay shares of that sum. It is not the span's wall time, which
// also holds the gaps between launches (SpanTime::duration_ms).
#pragma once

#include <string>
#include <vector>

#include "graph/step_spans.h"
#include "tensor/kernel_names.h"
#include "tensor/kernel_trace.h"

namespace glassbox {

// The records of one kernel (one uncapped short name) within a span (or within
// the unattributed).
struct KernelGroup {
  std::string name;       // short_kernel_name
  std::string key;        // short_kernel_name uncapped: what the group's records share
  std::string full_name;  // the demangled name of its first record
  KernelFamily family = KernelFamily::kOther;
  int count = 0;
  double gpu_ms = 0.0;
  double share = 0.0;     // of the step's GPU time
};

struct SpanKernels {
  uint64_t id = 0;
  int node = -1;
  std::string name;  // the layer's, or "sgd"
  Pass pass = Pass::kForward;
  double span_ms = 0.0;  // the span's wall time (SpanTime::duration_ms)
  std::vector<KernelGroup> kernels;  // in order of first launch
  int count = 0;
  double gpu_ms = 0.0;
  double share = 0.0;
};

struct FamilyTotal {
  KernelFamily family = KernelFamily::kOther;
  int count = 0;
  double gpu_ms = 0.0;
  double share = 0.0;
};

struct KernelMap {
  std::vector<SpanKernels> spans;         // every span, in step order, also those with no records
  std::vector<FamilyTotal> families;      // those with records, most GPU time first
  std::vector<KernelGroup> unattributed;  // in order of first launch
  int records = 0;
  int attributed_records = 0;
  double gpu_ms = 0.0;             // all records
  double attributed_ms = 0.0;
  double unattributed_ms = 0.0;
  double coverage = 0.0;           // attributed_ms / gpu_ms; 0 with no records
};

// Records whose span is kNoSpan, or an id that is not among `spans`, are
// unattributed. Never throws on what CUPTI may give: empty lists, zero-length
// records, ids out of range.
KernelMap map_kernels(const std::vector<SpanTime>& spans, const std::vector<KernelRecord>& records);

}  // namespace glassbox
