// tensor/event_timer.h: timestamps ("marks") recorded in stream order, read
// after the work is done. On a GPU each mark is a CUDA event recorded on the
// context's stream, so recording never waits for the device; on the CPU, where
// every layer has finished when it returns, a mark is the host's steady clock.
//
// Per-layer timing records one mark between consecutive layers and reads them
// all after the step: no host synchronisation per layer.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "tensor/context.h"
#include "tensor/cuda_entry.h"

namespace glassbox {

class EventTimer {
 public:
  EventTimer(const Context& ctx, int marks);

  void record(int mark);
  // Milliseconds between two recorded marks; on a GPU this waits for `to`.
  double elapsed_ms(int from, int to) const;

 private:
  const CudaResources* cuda_;
  int marks_;
  std::vector<std::chrono::steady_clock::time_point> host_marks_;
  std::shared_ptr<cuda_entry::EventSet> events_;
};

}  // namespace glassbox
