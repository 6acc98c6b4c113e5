// tools/cli/memory_report.cpp
#include "tools/cli/memory_report.h"

#include "tools/cli/table.h"

namespace glassbox::cli {

std::string memory_table(const MemoryStats& memory, const MemoryPlan& plan, Phase phase, Precision precision) {
  auto peak = [&](MemoryCategory c) { return memory.peak[static_cast<size_t>(c)]; };
  auto bytes = [](int64_t b) { return format_bytes(b); };
  auto saving = [&](size_t with, size_t without) {
    if (without == 0) return std::string();
    return cat(bytes(static_cast<int64_t>(without)), " without memory reuse (",
               fixed(static_cast<double>(without) / static_cast<double>(std::max<size_t>(with, 1)), 1), "x)");
  };
  using Align = Table::Align;
  // Note [Mixed precision] (graph/mixed_precision.h): what each category holds in bf16 and fp16.
  const bool mixed = is_mixed(precision);
  const std::string half(name_of(value_dtype(precision)));
  Table table({{"memory"}, {"peak", Align::kRight}, {"notes"}});
  table.add_row({"parameters", bytes(peak(MemoryCategory::kParameters)),
                 mixed ? cat("float32 master weights and their ", half, " working copy") : "float32"});
  // Note [16-bit parameter gradients] (layers/conv2d/conv2d_cuda.cpp): on a
  // GPU, a 16-bit Conv2d or Linear also keeps a scratch of its weights' size.
  table.add_row({"gradients", bytes(peak(MemoryCategory::kGradients)),
                 mixed ? cat("of the parameters, float32; on a GPU with each 16-bit convolution's and Linear's ", half,
                             " scratch of its weight gradient")
                       : "of the parameters, float32"});
  table.add_row({"optimizer state", bytes(peak(MemoryCategory::kOptimizerState)),
                 "SGD momentum, where a step updates; float32"});
  std::string in_place = plan.in_place > 0 ? cat("; ", plan.in_place, " layers run in place") : "";
  table.add_row({"activations", bytes(peak(MemoryCategory::kActivations)),
                 cat(mixed ? half + ", " : "",
                     phase == Phase::kInference ? "in flight; " : "kept for backward and in flight; ",
                     saving(plan.values.total, plan.values_without_reuse), in_place)});
  table.add_row({"activation gradients", bytes(peak(MemoryCategory::kActivationGrads)),
                 cat(mixed ? half + "; " : "", saving(plan.grads.total, plan.grads_without_reuse),
                     plan.shared_grads > 0 ? cat("; ", plan.shared_grads, " shared with an add's") : "")});
  table.add_row({"workspace", bytes(peak(MemoryCategory::kWorkspace)),
                 mixed ? "scratch shared by layers in turn, and the staging of the tensors a layer takes in "
                         "another type"
                       : "scratch shared by layers in turn"});
  const int64_t state = peak(MemoryCategory::kLayerState), data = peak(MemoryCategory::kData);
  table.add_row({"other", bytes(state + data),
                 cat("layer state ", bytes(state), " (statistics, dropout masks, max-pool indices, log-probabilities), data ",
                     bytes(data))});
  table.add_rule();
  table.add_row({"total", bytes(memory.peak_total), "the peak of the sum"});
  return table.str();
}

}  // namespace glassbox::cli
