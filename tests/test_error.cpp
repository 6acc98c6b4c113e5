// tests/test_error.cpp: the one check macro every library's status codes go
// through (GLASSBOX_CHECK_STATUS, tensor/error.h), with a made-up library so
// that its message is checked without a GPU: the library, the status and the
// library's text for it, the failed expression, and where it was.
#include <gtest/gtest.h>

#include "tensor/error.h"

namespace glassbox {
namespace {

enum FakeStatus { kFakeOk = 0, kFakeBusy = 7 };
const char* fake_error_string(FakeStatus status) { return status == kFakeBusy ? "device busy" : "no error"; }

int calls = 0;
FakeStatus fake_call(FakeStatus result) {
  ++calls;
  return result;
}

TEST(CheckStatus, AFailedCallIsALibraryErrorNamingTheCall) {
  calls = 0;
  const int line = __LINE__ + 2;
  try {
    GLASSBOX_CHECK_STATUS(fake_call(kFakeBusy), kFakeOk, fake_error_string, "FakeLib");
    FAIL() << "a failed status passed";
  } catch (const LibraryError& e) {
    EXPECT_EQ(std::string(e.what()),
              cat("FakeLib error 7 (device busy) in fake_call(kFakeBusy) at ", __FILE__, ":", line));
    EXPECT_EQ(e.library(), "FakeLib");
    EXPECT_EQ(e.expression(), "fake_call(kFakeBusy)");
    EXPECT_EQ(e.status(), 7);
  }
  EXPECT_EQ(calls, 1) << "the expression is evaluated once";
}

TEST(CheckStatus, SuccessPassesAfterOneCall) {
  calls = 0;
  EXPECT_NO_THROW(GLASSBOX_CHECK_STATUS(fake_call(kFakeOk), kFakeOk, fake_error_string, "FakeLib"));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace glassbox
