// tools/cli/memory_report.h: a compiled graph's memory, by what it is for.
//
// Rows are the categories a reader asks about: parameters, gradients,
// optimizer state, activations (what the plan keeps for backward, with what
// it would take without reuse), activation gradients, workspace, and other
// (layer state: running and saved statistics, dropout masks; and the input
// data). Figures are the allocator's, not estimates.
#pragma once

#include <string>

#include "graph/memory_plan.h"
#include "tensor/allocator.h"

namespace glassbox::cli {

// The peak of `memory` by category, as a table, with the plan's savings.
// `phase`: the graph's (an inference plan keeps nothing for a backward);
// `precision`: the graph's, whose element types the notes name (docs/precision.md).
std::string memory_table(const MemoryStats& memory, const MemoryPlan& plan, Phase phase = Phase::kTraining,
                         Precision precision = Precision::kFp32);


}  // namespace glassbox::cli
