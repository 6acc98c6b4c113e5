// tensor/nvtx_cuda.cpp: NVTX ranges (graph/step_spans.h). NVTX 3 is header
// only: with no tool attached (Nsight Systems, CUPTI's NVTX callbacks) a push
// is a call through a null-checked pointer and costs nanoseconds.
#include <nvtx3/nvToolsExt.h>

#include "tensor/cuda_entry.h"

namespace glassbox::cuda_entry {

void nvtx_push(const char* label) { nvtxRangePushA(label); }
void nvtx_pop() { nvtxRangePop(); }

}  // namespace glassbox::cuda_entry
