// tensor/step_readback.h: copies of a few small tensors (a step's loss, its
// logits and labels), taken in stream order after each step and read by the
// host later, so that reading them need not stop the host from queuing the
// next step.
//
// Note [Reading a step's results a step late]: on a GPU, a host that reads
// step k's loss as soon as it has queued step k waits for the device to
// finish the step, and the device then idles while the host queues step
// k + 1: the launch of its first kernels is exposed, every step. With depth
// 1 the host queues step k + 1 and only then reads step k, whose copies are
// done by then or soon after, while the device already has step k + 1 to
// run. The copies go into pinned (page-locked) host memory, one slot per
// step in flight, each followed by an event the host waits on: an
// asynchronous copy into pageable memory would not be asynchronous. On the
// CPU every call has finished when it returns; depth 0 reads each step at once.
// A reader that stops at a bad value (a non-finite loss) then knows it one
// step late: step k + 1 has run, on parameters step k updated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/context.h"
#include "tensor/cuda_entry.h"
#include "tensor/tensor.h"

namespace glassbox {

// One step's copies, in the order the tensors were given.
struct Readout {
  struct Copy {
    DType dtype = DType::kFloat32;
    std::vector<std::byte> bytes;
  };
  int64_t step = 0;
  std::vector<Copy> copies;
  // Tensor i's values as floats (float32, or float16 and bfloat16 widened).
  // Throws Error for another type.
  std::vector<float> floats(size_t i) const;
  std::vector<int> ints(size_t i) const;  // an int32 tensor's values (Error for another type)
};

class StepReadback {
 public:
  // `tensors` (on ctx's device, fixed in memory: a compiled graph's values)
  // are copied by every record(). `depth`: how many recorded steps may stay
  // unread after the newest, 0 or more.
  StepReadback(Context& ctx, std::vector<Tensor> tensors, int depth);
  // Waits for copies still in flight before it frees their memory.
  ~StepReadback();
  StepReadback(const StepReadback&) = delete;
  StepReadback& operator=(const StepReadback&) = delete;

  // Queues the copies of the tensors as they are once the work queued so far
  // is done, tagged `step`. Throws Error where depth + 1 steps are unread
  // already (take() first).
  void record(int64_t step);
  // Whether more than `depth` recorded steps are unread: take() one now.
  bool due() const { return unread_ > depth_; }
  int unread() const { return unread_; }
  // The oldest unread step's copies; on a GPU waits for them. Throws Error
  // where none is unread.
  Readout take();
  int depth() const { return depth_; }

 private:
  std::vector<Tensor> sources_;
  int depth_;
  int slots_;
  size_t slot_bytes_ = 0;
  std::vector<size_t> offsets_;  // per tensor, within a slot
  std::shared_ptr<void> pinned_;  // a GPU's slots (page-locked)
  std::vector<std::byte> host_;   // the CPU's slots
  std::shared_ptr<cuda_entry::EventSet> copied_;  // per slot, on a GPU
  const CudaResources* cuda_ = nullptr;
  std::vector<int64_t> steps_;  // per slot, the step it holds
  int oldest_ = 0;              // the slot of the oldest unread step
  int unread_ = 0;
  std::byte* slot(int s);
};

}  // namespace glassbox
