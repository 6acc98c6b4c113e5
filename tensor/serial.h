// tensor/serial.h: numbers that are never handed out twice in a process, to
// tell one object or one configuration of it from another (a captured step,
// optim/step_replay.h, is valid only for the objects it was captured with).
#pragma once

#include <atomic>
#include <cstdint>

namespace glassbox {

// 1, 2, 3, ...: a new number on every call, from any thread.
inline uint64_t next_serial() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

}  // namespace glassbox
