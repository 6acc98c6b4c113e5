// tensor/cuda_entry.h: the CUDA half of tensor/, declared without CUDA types.
// In a CUDA build these are defined in tensor/*_cuda.cpp; in a CPU-only build
// tensor/cpu_only_build.cpp defines them to throw NotBuiltError. Nothing here
// falls back to the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/context.h"

namespace glassbox {
struct KernelRecord;  // tensor/kernel_trace.h
}  // namespace glassbox

namespace glassbox::cuda_entry {

CudaAvailability availability();
std::shared_ptr<CudaResources> create_resources(int device_index);
std::shared_ptr<Allocator> make_allocator(std::shared_ptr<CudaResources> resources);
void set_precision(CudaResources& resources, Precision precision);
void synchronize(const CudaResources& resources);
// Stream-ordered copy between any two of host and device (unified addressing).
void copy(const CudaResources& resources, void* dst, const void* src, size_t bytes);
void fill_zero(const CudaResources& resources, void* dst, size_t bytes);
// dst <- src, `count` elements, float32 to float16 or bfloat16 or back (tensor/convert.h), stream-ordered.
void convert(const CudaResources& resources, const void* src, DType src_dtype, void* dst, DType dst_dtype,
             int64_t count);

// dst[i] += float32(src[i]) for `count` elements; src float16 or bfloat16 (tensor/convert.h).
void accumulate_widened(const CudaResources& resources, const void* src, DType src_dtype, float* dst,
                        int64_t count);

// data[i] *= *device_factor (read on the device, so the host never waits for
// it) for `count` float32 elements, or by `factor` where device_factor is null.
void scale(const CudaResources& resources, float* data, int64_t count, float factor, const float* device_factor);

// A set of CUDA events recorded on the resources' stream (tensor/event_timer.h).
// Without `timing` (events only waited on, never measured between: the step
// read-back's) they are made with cudaEventDisableTiming, which records and
// waits on faster; elapsed_ms needs timing.
struct EventSet;
std::shared_ptr<EventSet> create_events(const CudaResources& resources, int count, bool timing = true);
void record_event(const CudaResources& resources, EventSet& events, int index);
float elapsed_ms(EventSet& events, int from, int to);  // waits for `to`
void wait_event(EventSet& events, int index);  // the host waits for the event
// Page-locked host memory on the resources' device, freed with the pointer
// (tensor/step_readback.h).
std::shared_ptr<void> allocate_pinned(const CudaResources& resources, size_t bytes);

// The roofline's probes (tensor/device_peaks.h), on the resources' stream:
// the best of `repeats` n x n x n SGEMMs (cuBLAS, at the handle's math mode),
// in FLOP/s, and of `repeats` device-to-device copies of `bytes`, in bytes
// read + written per second.
double measure_gemm_flops(const CudaResources& resources, int n, int repeats);
double measure_copy_bytes(const CudaResources& resources, size_t bytes, int repeats);

// An NVTX range on the calling thread (graph/step_spans.h), for Nsight Systems.
void nvtx_push(const char* label);
void nvtx_pop();

// CUPTI activity records of kernels, copies and sets (tensor/kernel_trace.h).
struct KernelCollector;
std::shared_ptr<KernelCollector> create_kernel_collector(const CudaResources& resources);
void push_span(KernelCollector& collector, uint64_t id);
void pop_span(KernelCollector& collector);
// Both wait for the device and flush CUPTI's buffers; `clear` drops what was
// recorded, `collect` appends it to `records`, joined to the spans, and forgets it.
void clear_kernels(KernelCollector& collector);
void collect_kernels(KernelCollector& collector, std::vector<KernelRecord>& records);
uint64_t dropped_kernel_records(const KernelCollector& collector);

// Work queued on the resources' stream, captured into a CUDA graph and
// instantiated (tensor/cuda_graph.h, Note [Capturing a stream]).
struct CapturedGraph;
std::shared_ptr<CapturedGraph> capture_graph(const CudaResources& resources, const std::function<void()>& queue);
void launch_graph(const CudaResources& resources, const CapturedGraph& graph);
size_t graph_nodes(const CapturedGraph& graph);

}  // namespace glassbox::cuda_entry
