// graph/step_spans.h: one training step as a list of spans, one per layer and
// pass (graph/graph.h records them; train_step adds the optimizer's).
//
// Each span is two marks in stream order (tensor/event_timer.h: CUDA events on
// a GPU, the host clock on the CPU), read after the step, so recording never
// waits for the device. The same boundaries also
//   - push and pop an NVTX range "conv1 forward" on a GPU build (unless turned
//     off), so Nsight Systems shows the step's structure;
//   - tell a SpanListener (the CUPTI collector, tensor/kernel_trace.h) the
//     span's id, which it pushes as an external correlation id so that every
//     kernel launched inside the span can be attributed to its layer and pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/context.h"
#include "tensor/event_timer.h"
#include "tensor/pass.h"

namespace glassbox {

// One span of the last recorded step.
struct SpanTime {
  uint64_t id = 0;          // its place in the step (0, 1, ...): the external correlation id of its kernels
  int node = -1;            // the layer's graph node; -1 for a span that is not a layer's (the optimizer)
  std::string name;         // the layer's name, or what the span is ("sgd")
  Pass pass = Pass::kForward;
  double start_ms = 0.0;    // from the start of the step's first span
  double duration_ms = 0.0;
};

// SpanListener (tensor/pass.h) hears each span begin and end: the CUPTI
// collector of tensor/kernel_trace.h, which lives below graph/.

struct SpanOptions {
  bool timing = false;  // record marks and keep the spans for read()
  bool nvtx = true;     // push NVTX ranges (GPU builds only; nothing on the CPU)
};

class StepSpans final : public PassObserver {
 public:
  // `capacity`: the most spans one step may hold.
  StepSpans(const Context& ctx, int capacity, SpanOptions options);
  ~StepSpans() override;
  StepSpans(const StepSpans&) = delete;
  StepSpans& operator=(const StepSpans&) = delete;

  // Whether spans do anything at all: timing, NVTX or a listener, unless paused.
  bool active() const { return !paused_ && (options_.timing || nvtx_ || listener_ != nullptr); }
  // Whether each step's spans are recorded for reading back: timing marks
  // (CUDA events) or a listener (a kernel trace), unless paused. NVTX ranges
  // are the host's alone and record nothing.
  bool records() const { return !paused_ && (options_.timing || listener_ != nullptr); }
  // Paused, steps record nothing (read() still gives the last recorded step):
  // for measuring what recording costs, a step with spans against one without.
  void set_paused(bool paused) { paused_ = paused; }

  // Forgets the previous step's spans: the next begin() is the new step's first.
  void start_step();
  // Ends the open span, if any, and opens (node, pass). `name` must outlive
  // the step (a node's name does).
  void begin(int node, std::string_view name, Pass pass);
  // Ends the open span.
  void end();
  // A split backward's switch to its parameter gradients (Context::switch_pass):
  // ends the open span and opens `pass` for the same node.
  void switch_pass(Pass pass) override;

  void set_listener(SpanListener* listener) { listener_ = listener; }

  // The last step's spans, in the order they ran; waits for the device.
  // Throws Error unless timing was asked for.
  std::vector<SpanTime> read() const;
  int size() const { return static_cast<int>(spans_.size()); }

 private:
  struct Open {
    int node;
    std::string_view name;
    Pass pass;
  };
  struct NvtxLabel {
    std::string name;       // the span's name and pass, compared (no allocation) before reuse
    Pass pass = Pass::kForward;
    std::string text;       // "conv1 forward"
  };
  // The NVTX label of span `id` (Note [NVTX labels made once], step_spans.cpp).
  const char* nvtx_label(uint64_t id, std::string_view name, Pass pass);

  int capacity_;
  SpanOptions options_;
  bool nvtx_;  // NVTX asked for and this is a GPU context
  SpanListener* listener_ = nullptr;
  std::unique_ptr<EventTimer> marks_;  // two per span: begin, end
  std::vector<Open> spans_;
  std::vector<NvtxLabel> nvtx_labels_;  // by span id
  bool open_ = false;
  bool paused_ = false;
};

}  // namespace glassbox
