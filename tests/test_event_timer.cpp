// tests/test_event_timer.cpp: marks on the CPU (the host's steady clock) and
// the range check on a mark's index (tensor/event_timer.h).
#include <gtest/gtest.h>

#include <utility>

#include "tensor/event_timer.h"

namespace glassbox {
namespace {

TEST(EventTimer, MarksInOrderGiveNonNegativeTimes) {
  const Context ctx = Context::cpu();
  EventTimer timer(ctx, 3);
  for (int mark = 0; mark < 3; ++mark) timer.record(mark);
  EXPECT_GE(timer.elapsed_ms(0, 1), 0.0);
  EXPECT_GE(timer.elapsed_ms(1, 2), 0.0);
  EXPECT_NEAR(timer.elapsed_ms(0, 2), timer.elapsed_ms(0, 1) + timer.elapsed_ms(1, 2), 1e-9);
}

TEST(EventTimer, RefusesAMarkOutsideItsRange) {
  const Context ctx = Context::cpu();
  EventTimer timer(ctx, 3);
  const std::pair<int, const char*> cases[] = {{3, "EventTimer: mark 3 is out of range; this timer has marks 0 to 2"},
                                               {-1, "EventTimer: mark -1 is out of range; this timer has marks 0 to 2"}};
  for (const auto& [mark, message] : cases) {
    try {
      timer.record(mark);
      ADD_FAILURE() << "recorded mark " << mark << " of a 3-mark timer";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

}  // namespace
}  // namespace glassbox
