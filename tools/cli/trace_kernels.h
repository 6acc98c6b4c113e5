// tools/cli/trace_kernels.h: a GPU step's kernels, copies and sets as trace
// events (graph/chrome_trace.h), one track per CUDA stream, under the layer
// spans that launched them (tensor/kernel_trace.h).
#pragma once

#include <vector>

#include "graph/chrome_trace.h"
#include "graph/step_spans.h"
#include "tensor/kernel_trace.h"

namespace glassbox::cli {

// Adds a track per stream and an event per record to `trace`, whose layer
// spans start at 0 us. Note [Two clocks in one trace]: the spans are CUDA
// event times from the step's first mark, the records CUPTI timestamps; the
// records are placed so that the first record of the earliest span with any
// starts where that span starts. If a record then lies before 0 (a memset
// launched before the first span), every event moves later by that much.
void add_kernel_events(ChromeTrace& trace, const std::vector<SpanTime>& spans,
                       const std::vector<KernelRecord>& records, int first_track);

}  // namespace glassbox::cli
