// tests/test_error.cpp: the one check macro every library's status codes go
// through (GLASSBOX_CHECK_STATUS, tensor/error.h), with a made-up library so
// that its message is checked without a GPU: the library, the status and the
// library's text for it, the failed expression, and where it was. And
// excerpt(), through which every message quotes what a file holds, and
// rethrow_with_context(), which keeps an error's kind.
#include <gtest/gtest.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "tensor/error.h"
#include "tensor/json_error.h"

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

// Each kind of Glassbox error comes back as that kind, its message after
// the context; a library error keeps its status; anything else is an Error.
TEST(RethrowWithContext, KeepsTheKindOfErrorAndPutsTheContextFirst) {
  const std::string context = "while capturing a CUDA graph: ";
  auto again = [&](auto&& throwing) {
    try {
      throwing();
    } catch (...) {
      rethrow_with_context(std::current_exception(), context);
    }
  };
  auto expect = [&]<typename E>(E thrown) {
    try {
      again([&] { throw thrown; });
      ADD_FAILURE() << "nothing thrown";
    } catch (const E& e) {
      EXPECT_EQ(std::string(e.what()), context + thrown.what());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "another kind: " << e.what();
    }
  };
  expect(ConfigError("a bad flag"));
  expect(OutOfMemoryError("no memory"));
  expect(NumericalError("loss is nan"));
  expect(DataError("a truncated file"));
  expect(SizeError("too many elements"));
  expect(NotBuiltError("no CUDA"));
  try {
    again([] { throw ShapeError("a shape"); });
  } catch (const SizeError&) {
    ADD_FAILURE() << "a ShapeError became a SizeError";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), context + "a shape");
  }
  try {
    again([] { throw LibraryError("cuDNN", "cudnnFoo(h)", "x.cpp:1", 3, "CUDNN_STATUS_BAD_PARAM"); });
  } catch (const LibraryError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(context)) << e.what();
    EXPECT_EQ(e.status(), 3);
    EXPECT_EQ(e.library(), "cuDNN");
  }
  try {
    again([] { throw std::runtime_error("plain"); });
  } catch (const ConfigError&) {
    ADD_FAILURE() << "a plain exception became a ConfigError";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), context + "plain");
  }
  try {
    again([] { throw std::bad_alloc(); });
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()), context + "out of host memory (std::bad_alloc)");
  }
  try {
    again([] { throw 7; });
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), context + "something that is not a std::exception was thrown");
  }
}

TEST(Excerpt, PrintableTextIsKeptAndEveryOtherByteEscaped) {
  EXPECT_EQ(excerpt("conv1.weight"), "conv1.weight");
  EXPECT_EQ(excerpt(""), "");
  EXPECT_EQ(excerpt("a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
  // A terminal escape, DEL and the two bytes of UTF-8 "é": no byte outside printable ASCII is echoed raw.
  EXPECT_EQ(excerpt(std::string("\x1b[31m\x7f\xc3\xa9\0", 9)), "\\x1b[31m\\x7f\\xc3\\xa9\\x00");
}

TEST(Excerpt, LongTextIsCutWithItsWholeLength) {
  EXPECT_EQ(excerpt(std::string(40, 'y')), std::string(40, 'y'));  // exactly the limit: whole
  EXPECT_EQ(excerpt(std::string(1048576, 'x')), std::string(40, 'x') + "... (1,048,576 bytes)");
  EXPECT_EQ(excerpt("abcdef", 3), "abc... (6 bytes)");
  // The cut is counted in escaped characters and never splits an escape.
  EXPECT_EQ(excerpt(std::string(38, 'a') + "\x01zz"), std::string(38, 'a') + "... (41 bytes)");
  std::string newlines;  // 20 newlines escaped: 40 characters
  for (int i = 0; i < 20; ++i) newlines += "\\n";
  EXPECT_EQ(excerpt(std::string(20, '\n')), newlines);
  EXPECT_EQ(excerpt(std::string(21, '\n')), newlines + "... (21 bytes)");
}

TEST(JsonErrorReason, DropsNlohmannsPrefixAndCutsTheQuotedToken) {
  EXPECT_EQ(json_error_reason("[json.exception.parse_error.101] parse error at line 1, column 4: syntax error while "
                              "parsing value - invalid literal; last read: 'tru\x01'; expected end of input"),
            "parse error at line 1, column 4: syntax error while parsing value - invalid literal; last read: "
            "'tru\\x01'; expected end of input");
  const std::string token(100000, 'x');
  EXPECT_EQ(json_error_reason("[json.exception.parse_error.101] parse error: last read: '" + token + "'"),
            "parse error: last read: '" + std::string(40, 'x') + "... (100,000 bytes)'");
  EXPECT_EQ(json_error_reason("no prefix, no token"), "no prefix, no token");
}

}  // namespace
}  // namespace glassbox
