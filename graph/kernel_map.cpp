// graph/kernel_map.cpp: grouping a step's kernel records by span and family.
#include "graph/kernel_map.h"

#include <algorithm>
#include <unordered_map>

namespace glassbox {
namespace {

double duration_ms(const KernelRecord& record) {
  return record.end_ns > record.start_ns ? record.duration_ms() : 0.0;  // a clock hiccup is not negative time
}

KernelFamily family_of(const KernelRecord& record) {
  // Copies and sets are named by us ("memcpy HtoD"), not by a library: their kind says it.
  return record.kind == KernelRecordKind::kKernel ? kernel_family(record.name) : KernelFamily::kCopy;
}

// Adds `record` to the group of its short name in `groups`, made on first
// sight; grouped by the uncapped short name, so that two kernels whose names
// differ only past the cap (a tile size) stay apart.
void add_to(std::vector<KernelGroup>& groups, const KernelRecord& record) {
  std::string key = short_kernel_name(record.name, std::string::npos);
  auto it = std::find_if(groups.begin(), groups.end(), [&](const KernelGroup& g) { return g.key == key; });
  if (it == groups.end()) {
    groups.push_back({.name = short_kernel_name(record.name), .key = std::move(key), .full_name = record.name,
                      .family = family_of(record)});
    it = groups.end() - 1;
  }
  ++it->count;
  it->gpu_ms += duration_ms(record);
}

double share_of(double part, double whole) { return whole > 0.0 ? part / whole : 0.0; }

}  // namespace

KernelMap map_kernels(const std::vector<SpanTime>& spans, const std::vector<KernelRecord>& records) {
  KernelMap map;
  std::unordered_map<uint64_t, size_t> index;  // span id -> place in map.spans
  for (const SpanTime& span : spans) {
    index.emplace(span.id, map.spans.size());
    map.spans.push_back({.id = span.id, .node = span.node, .name = span.name, .pass = span.pass,
                         .span_ms = span.duration_ms});
  }
  std::vector<FamilyTotal> families(kKernelFamilies);
  for (int f = 0; f < kKernelFamilies; ++f) families[static_cast<size_t>(f)].family = static_cast<KernelFamily>(f);

  for (const KernelRecord& record : records) {
    const double ms = duration_ms(record);
    ++map.records;
    map.gpu_ms += ms;
    FamilyTotal& family = families[static_cast<size_t>(family_of(record))];
    ++family.count;
    family.gpu_ms += ms;
    const auto it = record.span == kNoSpan ? index.end() : index.find(record.span);
    if (it == index.end()) {
      add_to(map.unattributed, record);
      map.unattributed_ms += ms;
      continue;
    }
    SpanKernels& span = map.spans[it->second];
    add_to(span.kernels, record);
    ++span.count;
    span.gpu_ms += ms;
    ++map.attributed_records;
    map.attributed_ms += ms;
  }

  for (SpanKernels& span : map.spans) {
    span.share = share_of(span.gpu_ms, map.gpu_ms);
    for (KernelGroup& group : span.kernels) group.share = share_of(group.gpu_ms, map.gpu_ms);
  }
  for (KernelGroup& group : map.unattributed) group.share = share_of(group.gpu_ms, map.gpu_ms);
  for (FamilyTotal& family : families) {
    if (family.count == 0) continue;
    family.share = share_of(family.gpu_ms, map.gpu_ms);
    map.families.push_back(family);
  }
  std::stable_sort(map.families.begin(), map.families.end(),
                   [](const FamilyTotal& a, const FamilyTotal& b) { return a.gpu_ms > b.gpu_ms; });
  map.coverage = share_of(map.attributed_ms, map.gpu_ms);
  return map;
}

}  // namespace glassbox
