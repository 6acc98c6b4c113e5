// tensor/kernel_trace.cpp: the device-independent half of the CUPTI collector:
// the CPU check, demangling, and the calls into tensor/kernel_trace_cuda.cpp.
#include "tensor/kernel_trace.h"

#include <cxxabi.h>

#include <cstdlib>

#include "tensor/error.h"

namespace glassbox {

std::string_view name_of(KernelRecordKind kind) {
  switch (kind) {
    case KernelRecordKind::kKernel: return "kernel";
    case KernelRecordKind::kMemcpy: return "memcpy";
    case KernelRecordKind::kMemset: return "memset";
  }
  return "unknown";
}

std::string demangle(const char* name) {
  if (name == nullptr) return "";
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;  // a C name (extern "C" kernels), or not mangled
  std::string result(demangled);
  std::free(demangled);
  return result;
}

KernelTrace::KernelTrace(const Context& ctx) {
  if (!ctx.is_cuda()) {
    throw ConfigError(cat("KernelTrace: ", ctx.device().str(),
                          " has no kernels to trace; kernel records come from CUPTI and need a CUDA device"));
  }
  collector_ = cuda_entry::create_kernel_collector(*ctx.cuda_state());
}

KernelTrace::~KernelTrace() = default;

void KernelTrace::span_begin(uint64_t id) { cuda_entry::push_span(*collector_, id); }
void KernelTrace::span_end(uint64_t) { cuda_entry::pop_span(*collector_); }

void KernelTrace::start_step() { cuda_entry::clear_kernels(*collector_); }

std::vector<KernelRecord> KernelTrace::finish_step() {
  std::vector<KernelRecord> records;
  cuda_entry::collect_kernels(*collector_, records);
  return records;
}

uint64_t KernelTrace::dropped() const { return cuda_entry::dropped_kernel_records(*collector_); }

}  // namespace glassbox
