// tests/test_parse.cpp: the checked parsers every user-typed number and device
// name goes through (tensor/parse.h, Device::parse, choose_device).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tensor/context.h"
#include "tensor/parse.h"

namespace glassbox {
namespace {

std::string int_error(std::string_view text, int64_t min = 1, int64_t max = kMaxInt) {
  try {
    parse_int("--batch", text, min, max);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string number_error(std::string_view text) {
  try {
    parse_number("--lr", text, 0.0, 100.0);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseInt, ReadsWholeIntegersInRange) {
  EXPECT_EQ(parse_int("--batch", "8", 1, kMaxInt), 8);
  EXPECT_EQ(parse_int("--batch", "2147483647", 1, kMaxInt), 2147483647);
  EXPECT_EQ(parse_int("--warmup", "0", 0, 10), 0);
  EXPECT_EQ(parse_int("--offset", "-5", -10, 10), -5);
}

TEST(ParseInt, RejectsWhatAtoiAndStoiWouldBendOrCrashOn) {
  const std::string range = "--batch must be an integer from 1 to 2147483647, got ";
  // atoi: "1e3" -> 1, "8abc" -> 8, "99999999999" wraps; stoi throws std::out_of_range.
  for (const char* text : {"1e3", "8abc", "99999999999", "2147483648", "0", "-3", "", " 8", "8 ", "+8", "0x10",
                           "1.0", "99999999999999999999999"}) {
    EXPECT_EQ(int_error(text), range + "'" + text + "'") << text;
  }
}

TEST(ParseInt, ShortensAPastedPage) {
  const std::string text(500, '9');
  EXPECT_EQ(int_error(text), "--batch must be an integer from 1 to 2147483647, got '" + std::string(64, '9') +
                                 "...' (500 bytes)");
}

// What was typed (or read from a file: a checkpoint's settings) is quoted
// escaped: a control byte never reaches the terminal, and the cut counts bytes.
TEST(ParseInt, EscapesControlAndNonAsciiBytes) {
  const std::string range = "--batch must be an integer from 1 to 2147483647, got ";
  EXPECT_EQ(int_error("8\x1b[2J"), range + "'8\\x1b[2J'");
  EXPECT_EQ(int_error("8\n\t\\"), range + "'8\\n\\t\\\\'");
  EXPECT_EQ(number_error("0.5\xc2\xa0"), "--lr must be a number from 0 to 100, got '0.5\\xc2\\xa0'");
  std::string escaped;
  for (int i = 0; i < 64; ++i) escaped += "\\x07";
  EXPECT_EQ(int_error(std::string(70, '\a')), range + "'" + escaped + "...' (70 bytes)");
}

// Every item, the empty ones too, so that "1,2," is refused by name, not read as "1,2".
TEST(SplitCommas, KeepsEveryItemTheEmptyOnesToo) {
  using Items = std::vector<std::string_view>;
  EXPECT_EQ(split_commas("1,2,4"), (Items{"1", "2", "4"}));
  EXPECT_EQ(split_commas("1,,2"), (Items{"1", "", "2"}));
  EXPECT_EQ(split_commas("1,2,"), (Items{"1", "2", ""}));
  EXPECT_EQ(split_commas(",1"), (Items{"", "1"}));
  EXPECT_EQ(split_commas(""), (Items{""}));
  EXPECT_EQ(split_commas(","), (Items{"", ""}));
}

std::string growing_error(std::string_view text) {
  try {
    parse_growing_ints("--gpus", text, 1, 64, "device counts");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseGrowingInts, ReadsAListThatGrowsAndNamesWhatDoesNot) {
  EXPECT_EQ(parse_growing_ints("--gpus", "1,2,8", 1, 64, "device counts"), (std::vector<int64_t>{1, 2, 8}));
  EXPECT_EQ(parse_growing_ints("--gpus", "3", 1, 64, "device counts"), (std::vector<int64_t>{3}));
  const std::string range = "--gpus must be an integer from 1 to 64, got ";
  EXPECT_EQ(growing_error("1,2,"), range + "''");
  EXPECT_EQ(growing_error(""), range + "''");
  EXPECT_EQ(growing_error("1,,2"), range + "''");
  EXPECT_EQ(growing_error("1, 2"), range + "' 2'");
  EXPECT_EQ(growing_error("1,128"), range + "'128'");
  EXPECT_EQ(growing_error("1,4,2"), "--gpus '1,4,2': device counts must grow from left to right (4 then 2)");
  EXPECT_EQ(growing_error("2,2"), "--gpus '2,2': device counts must grow from left to right (2 then 2)");
}

TEST(ParseNumber, ReadsFiniteNumbersInRange) {
  EXPECT_DOUBLE_EQ(parse_number("--lr", "0.01", 0.0, 100.0), 0.01);
  EXPECT_DOUBLE_EQ(parse_number("--lr", "5e-4", 0.0, 100.0), 5e-4);
  EXPECT_DOUBLE_EQ(parse_number("--lr", "100", 0.0, 100.0), 100.0);
}

TEST(ParseNumber, RejectsNonFiniteGarbageAndOutOfRange) {
  for (const char* text : {"inf", "nan", "-inf", "1e400", "abc", "", "0.5x", "100.5", "-1", "0x1p3"}) {
    EXPECT_EQ(number_error(text), std::string("--lr must be a number from 0 to 100, got '") + text + "'") << text;
  }
}

TEST(ParseBytes, ReadsCountsWithBinaryUnits) {
  EXPECT_EQ(parse_bytes("--memory-limit", "4096"), 4096);
  EXPECT_EQ(parse_bytes("--memory-limit", "7B"), 7);
  EXPECT_EQ(parse_bytes("--memory-limit", "3KiB"), 3 * 1024);
  EXPECT_EQ(parse_bytes("--memory-limit", "512MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_bytes("--memory-limit", "2GiB"), int64_t{2} << 30);
  EXPECT_EQ(parse_bytes("--memory-limit", "4194304TiB"), int64_t{1} << 62);
}

TEST(ParseBytes, RejectsOtherUnitsSignsOverflowAndNothing) {
  for (const char* text : {"", "0", "0MiB", "-1", "1.5GiB", "2GB", "2G", "2 GiB", "GiB", "2gib", "4194305TiB",
                           "99999999999999999999", "+5"}) {
    try {
      parse_bytes("--memory-limit", text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--memory-limit must be a size like 512MiB or 2GiB (a positive integer and B, KiB, MiB, "
                            "GiB or TiB; at most 2^62 bytes), got '") + text + "'");
    }
  }
}

TEST(FirstNonUtf8, FindsTheFirstByteThatStartsNoValidSequence) {
  constexpr size_t kNone = std::string_view::npos;
  EXPECT_EQ(first_non_utf8(""), kNone);
  EXPECT_EQ(first_non_utf8("plain/ascii path.jpg"), kNone);
  EXPECT_EQ(first_non_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x88 \xf4\x8f\xbf\xbf"), kNone);  // é € 🐈 U+10FFFF
  EXPECT_EQ(first_non_utf8("img\xff" "dir"), 3u);                 // a byte that starts nothing
  EXPECT_EQ(first_non_utf8("ab\x80"), 2u);                        // a lone continuation byte
  EXPECT_EQ(first_non_utf8("a\xc3"), 1u);                         // cut short
  EXPECT_EQ(first_non_utf8("a\xc3(b"), 1u);                       // not followed by a continuation
  EXPECT_EQ(first_non_utf8("\xc0\xaf"), 0u);                      // overlong '/'
  EXPECT_EQ(first_non_utf8("\xe0\x80\xaf"), 0u);                  // overlong, three bytes
  EXPECT_EQ(first_non_utf8("\xed\xa0\x80"), 0u);                  // a surrogate
  EXPECT_EQ(first_non_utf8("\xf4\x90\x80\x80"), 0u);              // past U+10FFFF
  EXPECT_EQ(first_non_utf8("\xf5\x80\x80\x80"), 0u);
  EXPECT_EQ(first_non_utf8(std::string_view("a\0b", 3)), kNone);  // NUL is text; JSON escapes it
}

TEST(Utf8OrEscaped, KeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(utf8_or_escaped("w\xc3\xa9.safetensors"), "w\xc3\xa9.safetensors") << "UTF-8 as it is";
  EXPECT_EQ(utf8_or_escaped("w\xe9.safetensors"), "w\\xe9.safetensors") << "Latin-1, escaped";
  EXPECT_EQ(utf8_or_escaped(std::string(300, 'a') + "\xff"), std::string(300, 'a') + "\\xff") << "never cut";
}

TEST(DeviceParse, NamesTheFlagAndTheValidForms) {
  EXPECT_EQ(Device::parse("cuda:7"), Device::cuda(7));
  try {
    Device::parse("cuda:99999999999", "--device");
    FAIL() << "cuda:99999999999 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--device index in 'cuda:99999999999' must be an integer from 0 to 2147483647, got "
                           "'99999999999'");
  }
  for (const char* text : {"cuda:", "cuda:-1", "cuda:1x", "cuda: 1"}) {
    EXPECT_THROW(Device::parse(text, "--device"), ConfigError) << text;
  }
  try {
    Device::parse("", "--device");
    FAIL() << "an empty device was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--device: unknown device ''; valid: cpu, cuda, cuda:N");
  }
}

TEST(ChooseDevice, DefaultsToTheGpuOrSaysWhyNot) {
  const CudaAvailability cuda = cuda_availability();
  const DeviceChoice choice = choose_device("", "--device");
  if (cuda.usable) {
    EXPECT_EQ(choice.device, Device::cuda(0));
    EXPECT_EQ(choice.note, "");
  } else {
    EXPECT_EQ(choice.device, Device::cpu());
    EXPECT_EQ(choice.note, "no usable GPU (" + cuda.reason + "): running on the CPU");
  }
  EXPECT_EQ(choose_device("cpu", "--device").device, Device::cpu());
}

TEST(ChooseDevice, RefusesAGpuThatIsNotThere) {
  const CudaAvailability cuda = cuda_availability();
  try {
    choose_device("cuda:64", "--device");
    FAIL() << "cuda:64 was accepted";
  } catch (const ConfigError& e) {
    const std::string expected = cuda.usable ? "--device cuda:64: no such GPU; this machine has "
                                             : "--device cuda:64: no usable GPU (" + cuda.reason + ")";
    EXPECT_EQ(std::string(e.what()).substr(0, expected.size()), expected) << e.what();
  }
}

}  // namespace
}  // namespace glassbox
