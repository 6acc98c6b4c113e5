// tensor/kernel_trace.h: every kernel, memcpy and memset one training step
// ran on the GPU, each attributed to the span (layer and pass) that launched
// it, from CUPTI's Activity API (tensor/kernel_trace_cuda.cpp).
//
//   KernelTrace trace(ctx);                          // enables CUPTI activity records
//   graph.step_spans().set_listener(&trace);         // spans push their ids (graph/step_spans.h)
//   trace.start_step();  train_step(ctx, graph, sgd);
//   std::vector<KernelRecord> records = trace.finish_step();  // waits for the device
//
// Attribution: each span pushes its id as a CUPTI external correlation id
// before its launches and pops it after; CUPTI tags every CUDA API call made
// meanwhile with that id, and every kernel carries the correlation id of the
// call that launched it. Records launched outside any span (the graph's zeroing
// of gradients, a copy of the loss) have no span: kNoSpan.
//
// This header is CUDA-free. A CPU context cannot be traced (there are no
// kernels): the constructor throws ConfigError; a CPU-only build throws
// NotBuiltError for a CUDA context (which it cannot make anyway).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/context.h"
#include "tensor/cuda_entry.h"
#include "tensor/pass.h"

namespace glassbox {

enum class KernelRecordKind { kKernel, kMemcpy, kMemset };
std::string_view name_of(KernelRecordKind kind);  // "kernel", "memcpy", "memset"

inline constexpr uint64_t kNoSpan = std::numeric_limits<uint64_t>::max();

// One activity on the GPU.
struct KernelRecord {
  KernelRecordKind kind = KernelRecordKind::kKernel;
  std::string name;        // a kernel's demangled name; "memcpy HtoD", "memcpy DtoD", ...; "memset"
  uint64_t start_ns = 0;   // CUPTI's clock: only differences mean anything
  uint64_t end_ns = 0;
  uint32_t stream = 0;     // CUPTI's stream id
  uint64_t span = kNoSpan; // the SpanTime::id of the span that launched it, or kNoSpan
  uint64_t bytes = 0;      // memcpy and memset: bytes moved or set
  int grid[3] = {0, 0, 0};   // kernels only
  int block[3] = {0, 0, 0};
  int registers = 0;         // registers per thread

  // 0 for a record CUPTI had not finished (its end is 0), not a wrapped difference.
  double duration_ms() const { return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) * 1e-6 : 0.0; }
};

// The CUPTI collector. At most one exists at a time in a process (CUPTI's
// activity buffers are per process); a second throws Error.
class KernelTrace final : public SpanListener {
 public:
  // Throws ConfigError for a CPU context, NotBuiltError in a CPU-only build,
  // LibraryError if CUPTI refuses (another profiler attached, no permission).
  explicit KernelTrace(const Context& ctx);
  ~KernelTrace() override;
  KernelTrace(const KernelTrace&) = delete;
  KernelTrace& operator=(const KernelTrace&) = delete;

  void span_begin(uint64_t id) override;
  void span_end(uint64_t id) override;

  // Waits for the device and drops everything recorded so far.
  void start_step();
  // Waits for the device, flushes CUPTI's buffers and returns the records
  // since start_step(), in start order, each joined to its span.
  std::vector<KernelRecord> finish_step();
  // Records CUPTI dropped for want of buffer space since start_step() (0 in a good run).
  uint64_t dropped() const;


 private:
  std::shared_ptr<cuda_entry::KernelCollector> collector_;
};

// abi::__cxa_demangle, or the name as given if it is not a mangled C++ name.
std::string demangle(const char* name);

}  // namespace glassbox
