// tensor/event_timer.cpp: host-clock marks, or CUDA events via cuda_entry.
#include "tensor/event_timer.h"

#include "tensor/error.h"

namespace glassbox {

EventTimer::EventTimer(const Context& ctx, int marks)
    : cuda_(ctx.cuda_state()), marks_(marks), host_marks_(static_cast<size_t>(marks)) {
  if (cuda_) events_ = cuda_entry::create_events(*cuda_, marks);
}

void EventTimer::record(int mark) {
  if (mark < 0 || mark >= marks_) throw Error(cat("EventTimer: mark ", mark, " is out of range; this timer has marks 0 to ", marks_ - 1));
  if (events_) {
    cuda_entry::record_event(*cuda_, *events_, mark);
  } else {
    host_marks_[static_cast<size_t>(mark)] = std::chrono::steady_clock::now();
  }
}

double EventTimer::elapsed_ms(int from, int to) const {
  if (events_) return cuda_entry::elapsed_ms(*events_, from, to);
  const auto span = host_marks_.at(static_cast<size_t>(to)) - host_marks_.at(static_cast<size_t>(from));
  return std::chrono::duration<double, std::milli>(span).count();
}

}  // namespace glassbox
