// graph/step_spans.cpp: spans as pairs of stream-ordered marks.
#include "graph/step_spans.h"

#include "tensor/cuda_entry.h"
#include "tensor/error.h"

namespace glassbox {

std::string_view pass_name(Pass pass) {
  switch (pass) {
    case Pass::kForward: return "forward";
    case Pass::kBackward: return "backward";
    case Pass::kBackwardData: return "backward-data";
    case Pass::kBackwardWeights: return "backward-weights";
    case Pass::kOptimizer: return "optimizer";
  }
  return "unknown pass";
}

StepSpans::StepSpans(const Context& ctx, int capacity, SpanOptions options)
    : capacity_(capacity), options_(options), nvtx_(options.nvtx && ctx.is_cuda()) {
  if (capacity <= 0) throw Error(cat("StepSpans: capacity must be positive, got ", capacity));
  if (options_.timing) marks_ = std::make_unique<EventTimer>(ctx, 2 * capacity);
  spans_.reserve(static_cast<size_t>(capacity));
  if (nvtx_) nvtx_labels_.reserve(static_cast<size_t>(capacity));
}

StepSpans::~StepSpans() = default;

void StepSpans::start_step() {
  if (open_) end();
  spans_.clear();
}

void StepSpans::begin(int node, std::string_view name, Pass pass) {
  if (open_) end();
  if (spans_.size() == static_cast<size_t>(capacity_)) {
    throw Error(cat("StepSpans: more than ", capacity_, " spans in one step (at ", name, " ", pass_name(pass),
                    "); call start_step() at the start of each step"));
  }
  const uint64_t id = spans_.size();
  spans_.push_back({node, name, pass});
  open_ = true;
  if (nvtx_) cuda_entry::nvtx_push(nvtx_label(id, name, pass));
  if (listener_) listener_->span_begin(id);
  if (marks_) marks_->record(static_cast<int>(2 * id));
}

// Note [NVTX labels made once]: every step runs the same spans in the same
// order, so span `id`'s label is made on the first step and reused after,
// instead of a string built per span per step (VGG16: ~110 per step) on the
// path whose overhead `glassbox trace` reports. A different span at `id`
// (another graph, or a step that differs) rebuilds it.
const char* StepSpans::nvtx_label(uint64_t id, std::string_view name, Pass pass) {
  if (id >= nvtx_labels_.size()) nvtx_labels_.resize(id + 1);
  NvtxLabel& label = nvtx_labels_[id];
  if (label.name != name || label.pass != pass) label = {std::string(name), pass, cat(name, " ", pass_name(pass))};
  return label.text.c_str();
}

void StepSpans::end() {
  if (!open_) return;
  const uint64_t id = spans_.size() - 1;
  if (marks_) marks_->record(static_cast<int>(2 * id + 1));
  if (listener_) listener_->span_end(id);
  if (nvtx_) cuda_entry::nvtx_pop();
  open_ = false;
}

void StepSpans::switch_pass(Pass pass) {
  if (!open_) return;  // a layer's backward run outside a recorded step
  const Open current = spans_.back();
  if (current.pass == pass) return;  // a split backward with no input gradient began in this pass
  begin(current.node, current.name, pass);
}

std::vector<SpanTime> StepSpans::read() const {
  if (!marks_) throw Error("StepSpans::read: spans are timed only with SpanOptions::timing (CompileOptions::layer_timing)");
  if (open_) throw Error("StepSpans::read: a span is still open; end() it first");
  std::vector<SpanTime> times;
  times.reserve(spans_.size());
  for (size_t i = 0; i < spans_.size(); ++i) {
    const int begin_mark = static_cast<int>(2 * i);
    times.push_back({.id = i,
                     .node = spans_[i].node,
                     .name = std::string(spans_[i].name),
                     .pass = spans_[i].pass,
                     .start_ms = marks_->elapsed_ms(0, begin_mark),
                     .duration_ms = marks_->elapsed_ms(begin_mark, begin_mark + 1)});
  }
  return times;
}

}  // namespace glassbox
