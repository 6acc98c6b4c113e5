// tensor/cpu_only_build.cpp: what a CPU-only build links in place of
// tensor/*_cuda.cpp. Every CUDA entry point says so and throws; nothing falls
// back to the CPU behind the caller's back.
#include "tensor/cuda_entry.h"

#if !GLASSBOX_WITH_CUDA

#include "tensor/error.h"
#include "tensor/machine_state.h"
#include "tensor/runtime_info.h"

namespace glassbox::cuda_entry {
namespace {
[[noreturn]] void not_built(const char* what) {
  throw NotBuiltError(cat(what, ": Glassbox was built without CUDA (configure with -DGLASSBOX_CUDA=ON)"));
}
}  // namespace

struct EventSet {};

CudaAvailability availability() { return {false, 0, "built without CUDA"}; }
std::shared_ptr<CudaResources> create_resources(int) { not_built("Context::cuda"); }
std::shared_ptr<Allocator> make_allocator(std::shared_ptr<CudaResources>) { not_built("CUDA allocator"); }
void set_precision(CudaResources&, Precision) { not_built("set_precision"); }
void synchronize(const CudaResources&) { not_built("synchronize"); }
void copy(const CudaResources&, void*, const void*, size_t) { not_built("copy"); }
void fill_zero(const CudaResources&, void*, size_t) { not_built("fill_zero"); }
void convert(const CudaResources&, const void*, DType, void*, DType, int64_t) { not_built("convert"); }
void accumulate_widened(const CudaResources&, const void*, DType, float*, int64_t) {
  not_built("accumulate_widened");
}
void scale(const CudaResources&, float*, int64_t, float, const float*) { not_built("scale"); }
std::shared_ptr<EventSet> create_events(const CudaResources&, int, bool) { not_built("EventTimer"); }
void record_event(const CudaResources&, EventSet&, int) { not_built("EventTimer"); }
float elapsed_ms(EventSet&, int, int) { not_built("EventTimer"); }
void wait_event(EventSet&, int) { not_built("wait_event"); }
std::shared_ptr<void> allocate_pinned(const CudaResources&, size_t) { not_built("allocate_pinned"); }
double measure_gemm_flops(const CudaResources&, int, int) { not_built("measure_gemm_flops"); }
double measure_copy_bytes(const CudaResources&, size_t, int) { not_built("measure_copy_bytes"); }
// StepSpans pushes NVTX ranges only for a GPU context, which this build cannot make.
void nvtx_push(const char*) { not_built("NVTX"); }
void nvtx_pop() { not_built("NVTX"); }
struct KernelCollector {};
std::shared_ptr<KernelCollector> create_kernel_collector(const CudaResources&) { not_built("KernelTrace (CUPTI)"); }
void push_span(KernelCollector&, uint64_t) { not_built("KernelTrace"); }
void pop_span(KernelCollector&) { not_built("KernelTrace"); }
void clear_kernels(KernelCollector&) { not_built("KernelTrace"); }
void collect_kernels(KernelCollector&, std::vector<KernelRecord>&) { not_built("KernelTrace"); }
uint64_t dropped_kernel_records(const KernelCollector&) { not_built("KernelTrace"); }
struct CapturedGraph {};
std::shared_ptr<CapturedGraph> capture_graph(const CudaResources&, const std::function<void()>&) {
  not_built("CUDA graphs");
}
void launch_graph(const CudaResources&, const CapturedGraph&) { not_built("CUDA graphs"); }
size_t graph_nodes(const CapturedGraph&) { not_built("CUDA graphs"); }
void describe(const Context&, RuntimeInfo&) {}  // a CPU-only build links no CUDA library
// Only a CUDA context asks for the GPU's state, and this build cannot make one.
std::optional<GpuSample> sample_gpu(const Context&, std::string&) { not_built("NVML"); }

}  // namespace glassbox::cuda_entry

#endif  // !GLASSBOX_WITH_CUDA
