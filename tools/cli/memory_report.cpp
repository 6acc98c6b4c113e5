// tools/cli/memory_report.cpp
#include "tools/cli/memory_report.h"

#include "tools/cli/table.h"

namespace glassbox::cli {

std::string memory_table(const MemoryStats& memory, const MemoryPlan& plan, Phase phase) {
  auto peak = [&](MemoryCategory c) { return memory.peak[static_cast<size_t>(c)]; };
  auto bytes = [](int64_t b) { return format_bytes(b); };
  auto saving = [&](size_t with, size_t without) {
    if (without == 0) return std::string();
    return cat(bytes(static_cast<int64_t>(without)), " without memory reuse (",
               fixed(static_cast<double>(without) / static_cast<double>(std::max<size_t>(with, 1)), 1), "x)");
  };
  using Align = Table::Align;
  Table table({{"memory"}, {"peak", Align::kRight}, {"notes"}});
  table.add_row({"parameters", bytes(peak(MemoryCategory::kParameters))});
  table.add_row({"gradients", bytes(peak(MemoryCategory::kGradients)), "of the parameters"});
  table.add_row({"optimizer state", bytes(peak(MemoryCategory::kOptimizerState)), "SGD momentum, where a step updates"});
  std::string in_place = plan.in_place > 0 ? cat("; ", plan.in_place, " layers run in place") : "";
  table.add_row({"activations", bytes(peak(MemoryCategory::kActivations)),
                 cat(phase == Phase::kInference ? "in flight; " : "kept for backward and in flight; ",
                     saving(plan.values.total, plan.values_without_reuse), in_place)});
  table.add_row({"activation gradients", bytes(peak(MemoryCategory::kActivationGrads)),
                 saving(plan.grads.total, plan.grads_without_reuse)});
  table.add_row({"workspace", bytes(peak(MemoryCategory::kWorkspace)), "scratch shared by layers in turn"});
  const int64_t state = peak(MemoryCategory::kLayerState), data = peak(MemoryCategory::kData);
  table.add_row({"other", bytes(state + data),
                 cat("layer state ", bytes(state), " (statistics, dropout masks, max-pool indices, log-probabilities), data ",
                     bytes(data))});
  table.add_rule();
  table.add_row({"total", bytes(memory.peak_total), "the peak of the sum"});
  return table.str();
}

}  // namespace glassbox::cli
