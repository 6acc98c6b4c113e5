// tensor/kernel_trace_cuda.cpp: the CUPTI Activity API collector behind
// tensor/kernel_trace.h. CUPTI writes activity records into buffers we hand
// it; when a buffer is full (or flushed) it gives it back and we parse it.
//
// Built against CUPTI 13. KernelTrace.RecordsTheKernelsOfASpanOnAGpu and
// CliKernels.MapsOneStepOnAGpu (tests/test_kernel_map.cpp) check it on a GPU;
// the parts that need none (demangling, names, the map) are tested on the CPU.
#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "tensor/context_cuda.h"
#include "tensor/cuda_entry.h"
#include "tensor/error.h"
#include "tensor/kernel_trace.h"

namespace glassbox::cuda_entry {
namespace {

const char* cupti_message(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) return "unknown CUPTI error";
  return text;
}

#define CUPTI_CHECK(expr) GLASSBOX_CHECK_STATUS(expr, CUPTI_SUCCESS, cupti_message, "CUPTI")

// Note [CUPTI buffers are ours, 8-byte aligned]: CUPTI asks for each buffer
// through a callback and returns it through another; the records inside are
// read in place as structs, so the buffer must be aligned to 8 bytes (CUPTI
// checks ACTIVITY_RECORD_ALIGNMENT and drops the buffer otherwise). We
// allocate with aligned_alloc and free after parsing. Too few or too small
// buffers make CUPTI drop records, which it only counts: dropped() reports it.
constexpr size_t kBufferBytes = size_t{8} << 20;  // 8 MiB: some 20,000 kernel records
constexpr size_t kBufferAlignment = 8;

// Note [External correlation needs API records]: CUPTI writes an external
// correlation record only beside a CUDA API record ("the activity API record
// will be preceded by a CUpti_ActivityExternalCorrelation record"), so the
// runtime and driver API kinds are enabled too, although we read none of
// their records. Driver as well as runtime: cuDNN and cuBLAS launch many of
// their kernels through the driver API (cuLaunchKernel), not the runtime.
//
// Note [Concurrent kernels]: CUPTI_ACTIVITY_KIND_KERNEL serialises every
// kernel to time it; CONCURRENT_KERNEL does not, so the step runs as it would
// untraced (one stream here, but cuDNN may use its own).
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

std::string memcpy_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "memcpy DtoA";
    default: return "memcpy";
  }
}

}  // namespace

struct KernelCollector {
  const CudaResources* resources = nullptr;
  mutable std::mutex mutex;  // buffers complete on CUPTI's worker thread as well as ours
  // Note [External ids arrive as their own records]: a kernel record does not
  // carry the external id pushed around its launch; a separate
  // CUpti_ActivityExternalCorrelation record maps the launching API call's
  // correlationId to it, possibly in another buffer, before or after the
  // kernel's. So records are kept with their correlationId and joined only in
  // collect_kernels, after the last flush.
  std::vector<KernelRecord> records;
  std::vector<uint32_t> correlation;                // records[i]'s correlationId
  std::unordered_map<uint32_t, uint64_t> span_of;   // correlationId -> span id
  uint64_t dropped = 0;
  bool failed = false;  // a buffer could not be parsed (out of memory in the callback)

  void parse(uint8_t* buffer, size_t valid_bytes);
};

namespace {

// Note [One collector per process]: CUPTI's buffer callbacks are plain
// functions, registered for the whole process, so they find the collector
// through this pointer; a second collector is refused. CUPTI's worker thread
// may complete a buffer while the collector goes away: the callback holds
// g_registration for as long as it uses the collector, and the collector is
// unregistered under it.
std::mutex g_registration;
KernelCollector* g_collector = nullptr;  // guarded by g_registration

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;  // size 0: CUPTI drops records rather than write to null
  *max_records = 0;                               // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid_bytes) {
  const std::lock_guard<std::mutex> registration(g_registration);
  KernelCollector* collector = g_collector;
  if (collector != nullptr && buffer != nullptr) {
    collector->parse(buffer, valid_bytes);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      const std::lock_guard<std::mutex> lock(collector->mutex);
      collector->dropped += dropped;
    }
  }
  std::free(buffer);
}

}  // namespace

// Runs inside a CUPTI callback: nothing may throw out of it.
void KernelCollector::parse(uint8_t* buffer, size_t valid_bytes) {
  const std::lock_guard<std::mutex> lock(mutex);
  try {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          // Note [Kernel names arrive mangled]: CUPTI gives the symbol
          // ("_ZN5cudnn3cnn..."), and the string is CUPTI's: copy it now.
          KernelRecord r{.kind = KernelRecordKind::kKernel, .name = demangle(k->name), .start_ns = k->start,
                         .end_ns = k->end, .stream = k->streamId};
          r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
          r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
          r.registers = k->registersPerThread;
          records.push_back(std::move(r));
          correlation.push_back(k->correlationId);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          records.push_back({.kind = KernelRecordKind::kMemcpy, .name = memcpy_name(m->copyKind), .start_ns = m->start,
                             .end_ns = m->end, .stream = m->streamId, .bytes = m->bytes});
          correlation.push_back(m->correlationId);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
          records.push_back({.kind = KernelRecordKind::kMemset, .name = "memset", .start_ns = m->start,
                             .end_ns = m->end, .stream = m->streamId, .bytes = m->bytes});
          correlation.push_back(m->correlationId);
          break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
          if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) span_of[e->correlationId] = e->externalId;
          break;
        }
        default: break;  // runtime and driver API records: only needed for the above (Note [External correlation needs API records])
      }
    }
  } catch (...) {
    failed = true;
  }
}

std::shared_ptr<KernelCollector> create_kernel_collector(const CudaResources& resources) {
  auto owned = std::make_unique<KernelCollector>();
  owned->resources = &resources;
  {
    const std::lock_guard<std::mutex> registration(g_registration);
    if (g_collector != nullptr) {
      throw Error("KernelTrace: another KernelTrace is alive; CUPTI's activity records are per process, so one at a time");
    }
    g_collector = owned.get();
  }
  // Registered: from here on the deleter turns CUPTI off again, also when enabling fails below.
  std::shared_ptr<KernelCollector> collector(owned.release(), [](KernelCollector* c) {
    // Never throws: unchecked calls. Flushing first hands back every buffer
    // while the collector can still take it.
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const std::lock_guard<std::mutex> registration(g_registration);
    g_collector = nullptr;
    delete c;
  });
  CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  for (CUpti_ActivityKind kind : kKinds) CUPTI_CHECK(cuptiActivityEnable(kind));
  return collector;
}

// Note [External ids are per thread]: CUPTI keeps one stack of external ids
// per host thread and tags the API calls of that thread only. Spans begin and
// end on the thread that launches the step, which is the one that must push.
void push_span(KernelCollector&, uint64_t id) {
  CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id));
}

void pop_span(KernelCollector&) {
  uint64_t last = 0;
  CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
}

namespace {
// Note [Records arrive only after a flush]: CUPTI hands a buffer back when it
// is full or flushed, and a kernel's record is written only once the kernel
// has finished. So: wait for the whole device (the loader's copy stream and
// the libraries' own streams too, not only the context's), then force a
// flush of every buffer, complete or not; only then has each record of the
// step been parsed.
void drain(KernelCollector& collector) {
  CUDA_CHECK(cudaSetDevice(collector.resources->device));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
}
}  // namespace

void clear_kernels(KernelCollector& collector) {
  drain(collector);
  const std::lock_guard<std::mutex> lock(collector.mutex);
  collector.records.clear();
  collector.correlation.clear();
  collector.span_of.clear();
  collector.dropped = 0;
  collector.failed = false;
}

void collect_kernels(KernelCollector& collector, std::vector<KernelRecord>& records) {
  drain(collector);
  const std::lock_guard<std::mutex> lock(collector.mutex);
  if (collector.failed) throw Error("KernelTrace: a CUPTI activity buffer could not be parsed (out of host memory?)");
  const size_t first = records.size();
  for (size_t i = 0; i < collector.records.size(); ++i) {
    KernelRecord& record = collector.records[i];
    const auto it = collector.span_of.find(collector.correlation[i]);
    record.span = it != collector.span_of.end() ? it->second : kNoSpan;
    records.push_back(std::move(record));
  }
  std::stable_sort(records.begin() + static_cast<std::ptrdiff_t>(first), records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  collector.records.clear();
  collector.correlation.clear();
  collector.span_of.clear();
}

uint64_t dropped_kernel_records(const KernelCollector& collector) {
  const std::lock_guard<std::mutex> lock(collector.mutex);
  return collector.dropped;
}

}  // namespace glassbox::cuda_entry
