// tools/cli/trace_kernels.cpp
#include "tools/cli/trace_kernels.h"

#include <algorithm>
#include <map>

#include "tensor/error.h"
#include "tensor/kernel_names.h"

namespace glassbox::cli {

void add_kernel_events(ChromeTrace& trace, const std::vector<SpanTime>& spans,
                       const std::vector<KernelRecord>& records, int first_track) {
  if (records.empty()) return;
  // The anchor: the earliest span that launched anything, and its first record.
  uint64_t anchor_span = kNoSpan;
  uint64_t anchor_ns = 0;
  for (const KernelRecord& r : records) {
    if (r.span == kNoSpan || r.span >= spans.size()) continue;
    if (anchor_span == kNoSpan || r.span < anchor_span || (r.span == anchor_span && r.start_ns < anchor_ns)) {
      anchor_span = r.span;
      anchor_ns = r.start_ns;
    }
  }
  double anchor_us = 0.0;
  if (anchor_span == kNoSpan) {  // nothing attributed: start at the first record
    anchor_ns = std::min_element(records.begin(), records.end(), [](const auto& a, const auto& b) {
                  return a.start_ns < b.start_ns;
                })->start_ns;
  } else {
    anchor_us = spans[anchor_span].start_ms * 1e3;
  }
  std::map<uint32_t, int> track_of;  // CUPTI stream id -> track
  double earliest_us = 0.0;
  for (const KernelRecord& r : records) {
    auto [it, added] = track_of.try_emplace(r.stream, first_track + static_cast<int>(track_of.size()));
    if (added) trace.tracks.push_back({it->second, cat("stream ", r.stream, " (kernels, copies, sets)")});
    const double start_us = anchor_us + (static_cast<double>(r.start_ns) - static_cast<double>(anchor_ns)) / 1e3;
    earliest_us = std::min(earliest_us, start_us);
    const bool kernel = r.kind == KernelRecordKind::kKernel;
    TraceEvent event{.name = kernel ? short_kernel_name(r.name) : r.name,
                     .category = std::string(name_of(r.kind)),
                     .start_us = start_us,
                     .duration_us = static_cast<double>(r.end_ns - r.start_ns) / 1e3,
                     .track = it->second};
    event.text_args.emplace_back("full_name", r.name);
    if (r.span < spans.size()) {
      event.text_args.emplace_back("layer", spans[r.span].name);
      event.text_args.emplace_back("pass", std::string(pass_name(spans[r.span].pass)));
    } else {
      event.text_args.emplace_back("span", "none: launched outside every span");
    }
    if (kernel) {
      event.text_args.emplace_back("family", std::string(name_of(kernel_family(r.name))));
      event.text_args.emplace_back("grid", cat(r.grid[0], "x", r.grid[1], "x", r.grid[2]));
      event.text_args.emplace_back("block", cat(r.block[0], "x", r.block[1], "x", r.block[2]));
      event.number_args.emplace_back("registers", r.registers);
    } else {
      event.number_args.emplace_back("bytes", static_cast<double>(r.bytes));
    }
    trace.events.push_back(std::move(event));
  }
  if (earliest_us < 0) {  // Note [Two clocks in one trace]
    for (TraceEvent& event : trace.events) event.start_us -= earliest_us;
  }
}

}  // namespace glassbox::cli
