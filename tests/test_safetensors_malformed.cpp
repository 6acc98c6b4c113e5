// tests/test_safetensors_malformed.cpp: every way a safetensors file can be
// wrong, written by hand byte by byte, refused with a DataError that names
// the file, where (a byte offset, a tensor) and what is wrong
// (tensor/safetensors.h). The reader takes the bytes (decode_safetensors)
// and the path (read_safetensors) through the same checks; the path's own
// errors (missing, not a file) are at the end. (A named pipe:
// tests/test_input_file.cpp.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>

#include "tensor/error.h"
#include "tensor/safetensors.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

// 8 bytes of length (the header's, unless `length` says otherwise), the
// header, the data.
std::vector<std::byte> file_of(const std::string& header, const std::string& data = "",
                               std::optional<uint64_t> length = std::nullopt) {
  const uint64_t n = length.value_or(header.size());
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  bytes += header + data;
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// The DataError's message without "f.safetensors: ", or "(accepted)".
std::string problem(const std::vector<std::byte>& bytes) {
  try {
    decode_safetensors(bytes, "f.safetensors");
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("f.safetensors: ", 0), 0u) << what;
    return what.substr(std::strlen("f.safetensors: "));
  }
  return "(accepted)";
}

std::string problem(const std::string& header, const std::string& data = "") {
  return problem(file_of(header, data));
}

// One F32 tensor "w" with the given entry fields.
std::string entry(const std::string& fields) { return R"({"w":{)" + fields + "}}"; }

TEST(SafetensorsMalformed, TheLengthPrefix) {
  EXPECT_EQ(problem(std::vector<std::byte>(5)),
            "a file of 5 bytes is too short for safetensors: its first 8 bytes give the header's length");
  EXPECT_EQ(problem(file_of("{}", "", 40)),
            "the header length at byte 0 is 40 bytes, but only 2 follow: the file is truncated");
  EXPECT_EQ(problem(file_of("{}", "", 0x0a0a0a0a0a0a0a0aull)),
            "the header length at byte 0 is 723,401,728,380,766,730 bytes, more than the format's 100,000,000: "
            "not a safetensors file");
  EXPECT_EQ(problem(file_of("", "", 0)),
            "the header (bytes 8 to 8) is not JSON: at byte 8: parse error at line 1, column 1: syntax error while "
            "parsing value - unexpected end of input; expected '[', '{', or a literal");
}

TEST(SafetensorsMalformed, HeadersThatAreNotJson) {
  EXPECT_EQ(problem(R"({"w": x})"),
            "the header (bytes 8 to 16) is not JSON: at byte 14: parse error at line 1, column 7: syntax error "
            "while parsing value - invalid literal; last read: '\"w\": x'");
  // Padding with NULs, which some writers do, is not the format's spaces.
  // Note [NUL ends nlohmann's input]: without a check of its own, this would read as {}.
  EXPECT_EQ(problem(std::string("{}\0\0\0\0\0\0", 8)),
            "the header (bytes 8 to 16) is not JSON: at byte 10: a NUL byte (padding is spaces)");
  EXPECT_EQ(problem(std::string("{\"w\":\"\0\"}", 9)),
            "the header (bytes 8 to 17) is not JSON: at byte 14: a NUL byte (padding is spaces)");
  // The byte where the parser stopped: the one after the bad UTF-8.
  EXPECT_NE(problem("{\"caf\xe9\": 1}").find("is not JSON: at byte 14: parse error at line 1, column 7: syntax error "
                                             "while parsing object key - invalid string: ill-formed UTF-8 byte"),
            std::string::npos);
  EXPECT_EQ(problem(R"({"w":{}} x)"),
            "the header (bytes 8 to 18) is not JSON: at byte 17: parse error at line 1, column 10: syntax error "
            "while parsing value - invalid literal; last read: '\"w\":{}} x'; expected end of input");
  EXPECT_EQ(problem(R"([1, 2])"), "the header is a JSON array; the format's is an object of tensors");
  // nlohmann reports a number too large for a double as out_of_range, without a position.
  EXPECT_EQ(problem(R"({"w": {"shape": [1e999]}})"),
            "the header (bytes 8 to 33) is not JSON: number overflow parsing '1e999'");
  // Parsers keep one of two equal keys without a word; the reader refuses them.
  EXPECT_EQ(problem(R"({"w": {}, "w": {}})"), "the header has the key \"w\" twice");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","dtype":"F32")")), "the header has the key \"dtype\" twice in one entry");
  EXPECT_EQ(problem(entry(R"("shape":[[2]])")),
            "the header nests JSON deeper than the format (header, tensor entry, list of numbers)");
}

TEST(SafetensorsMalformed, TensorEntries) {
  EXPECT_EQ(problem(R"({"w": [1]})"),
            "tensor 'w': its entry is a JSON array; the format's is an object of dtype, shape and data_offsets");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4],"stride":[1])"), std::string(4, 'x')),
            "tensor 'w': unknown field \"stride\" (the format's are dtype, shape and data_offsets)");
  EXPECT_EQ(problem(entry(R"("shape":[1],"data_offsets":[0,4])"), std::string(4, 'x')), "tensor 'w': no \"dtype\"");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","data_offsets":[0,4])"), std::string(4, 'x')), "tensor 'w': no \"shape\"");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[1])"), std::string(4, 'x')), "tensor 'w': no \"data_offsets\"");
  EXPECT_EQ(problem(entry(R"("dtype":4,"shape":[1],"data_offsets":[0,4])")), "tensor 'w': dtype is a JSON number, not a name");
  EXPECT_NE(problem(entry(R"("dtype":"F33","shape":[1],"data_offsets":[0,4])"))
                .find("tensor 'w': unknown dtype \"F33\" (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, "),
            std::string::npos);
  EXPECT_EQ(problem(entry(R"("dtype":"F4","shape":[2],"data_offsets":[0,1])")),
            "tensor 'w': dtype F4 packs elements into bits of a byte, which Glassbox does not read");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[-1],"data_offsets":[0,4])")),
            "tensor 'w': shape [-1] is not a list of sizes (integers, 0 or more)");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[1.0],"data_offsets":[0,4])")),
            "tensor 'w': shape [1.0] is not a list of sizes (integers, 0 or more)");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":"1","data_offsets":[0,4])")),
            "tensor 'w': shape \"1\" is not a list of sizes (integers, 0 or more)");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[16777216,16777216,2],"data_offsets":[0,4])")),
            "tensor 'w': shape [16777216,16777216,2] has more than 2^48 elements, Glassbox's limit");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[18446744073709551615, 0],"data_offsets":[0,0])")),
            "tensor 'w': shape [18446744073709551615,0] has more than 2^48 elements, Glassbox's limit");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4,8])")),
            "tensor 'w': data_offsets [0,4,8] is not [begin, end], two byte offsets");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,-4])")),
            "tensor 'w': data_offsets [0,-4] is not [begin, end], two byte offsets");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[1],"data_offsets":[8,4])")),
            "tensor 'w': data_offsets [8,4] end before they begin");
  EXPECT_EQ(problem(entry(R"("dtype":"F32","shape":[2,3],"data_offsets":[0,20])"), std::string(20, 'x')),
            "tensor 'w': F32 (2, 3) takes 24 bytes; its data_offsets [0,20] hold 20");
}

TEST(SafetensorsMalformed, Metadata) {
  EXPECT_EQ(problem(R"({"__metadata__": ["a"]})"),
            "__metadata__ is a JSON array; the format's is an object of strings");
  EXPECT_EQ(problem(R"({"__metadata__": {"epoch": 3}})"),
            "__metadata__ \"epoch\" is a JSON number; the format allows strings only");
  // null is what some writers put for no metadata: none.
  EXPECT_EQ(problem(R"({"__metadata__": null})"), "(accepted)");
}

// What the header holds is quoted escaped and cut (excerpt(), tensor/error.h):
// a name or a token can hold control bytes, or be megabytes long.
TEST(SafetensorsMalformed, FileContentsInMessagesAreEscapedAndCut) {
  EXPECT_EQ(problem(R"({"a\nb\u001b[31m": [1]})"),
            "tensor 'a\\nb\\x1b[31m': its entry is a JSON array; the format's is an object of dtype, shape and "
            "data_offsets");
  EXPECT_EQ(problem("{\"" + std::string(10000, 'n') + "\": [1]}"),
            "tensor '" + std::string(120, 'n') +
                "... (10,000 bytes)': its entry is a JSON array; the format's is an object of dtype, shape and "
                "data_offsets");
  EXPECT_EQ(problem(entry(R"("dtype":"F32\t)" + std::string(100, '3') + R"(","shape":[1],"data_offsets":[0,4])"))
                .rfind("tensor 'w': unknown dtype \"F32\\t" + std::string(35, '3') + "... (104 bytes)\" (known: BOOL, ",
                       0),
            0u);
  EXPECT_EQ(problem(entry(R"("shape":[1],"data_offsets":[0,4],"dtype":"F32","\u0007)" + std::string(50, 'k') +
                          R"(":1)"),
                    std::string(4, 'x')),
            "tensor 'w': unknown field \"\\x07" + std::string(36, 'k') + "... (51 bytes)\" (the format's are dtype, "
            "shape and data_offsets)");
  EXPECT_EQ(problem(R"({"__metadata__": {")" + std::string(200, 'm') + R"(": 3}})"),
            "__metadata__ \"" + std::string(120, 'm') + "... (200 bytes)\" is a JSON number; the format allows strings "
            "only");
  // The token nlohmann quotes ("last read: '...'") is cut too: here an unclosed string of 100,000 bytes.
  EXPECT_EQ(problem(R"({"w": ")" + std::string(100000, 'v')),
            "the header (bytes 8 to 100,015) is not JSON: at byte 100,015: parse error at line 1, column 100008: "
            "syntax error while parsing value - invalid string: missing closing quote; last read: '\"" +
                std::string(39, 'v') + "... (100,001 bytes)'");
}

// Note [A timed test]: a header of n entries is written and read in time
// linear in n (Note [The header through SAX], tensor/safetensors.cpp). With
// a linear search per key, 100,000 entries take a minute; in linear time,
// about a second. The bound is wall-clock time and generous (20 s), so that a
// loaded machine or a sanitizer build passes while a quadratic reader cannot.
TEST(SafetensorsMalformed, AHeaderOfManyEntriesIsWrittenAndReadInLinearTime) {
  constexpr int kTensors = 100000;
  SafetensorsFile file;
  for (int i = 0; i < kTensors; ++i) {
    // Every tenth tensor has no bytes: its offsets equal the next one's begin,
    // and only the file's order places it.
    const auto byte = static_cast<uint8_t>(i);
    file.tensors.push_back(i % 10 == 0 ? host_tensor("t" + std::to_string(i), "U8", {0}, nullptr, 0)
                                       : host_tensor("t" + std::to_string(i), "U8", {1}, &byte, 1));
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string bytes = encode_safetensors(file);
  const SafetensorsFile back =
      decode_safetensors({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "many.safetensors");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(back.tensors.size(), file.tensors.size());
  for (size_t i = 0; i < back.tensors.size(); ++i) {
    if (back.tensors[i].name != file.tensors[i].name || back.tensors[i].bytes != file.tensors[i].bytes) {
      ADD_FAILURE() << "tensor " << i << " read back as " << back.tensors[i].name;
      break;
    }
  }
  EXPECT_LT(seconds, 20.0) << kTensors << " entries";
}

// A header of a quarter of a million empty entries fits the length limit
// but is refused as it is read, before each entry is kept (about 1 kB
// apiece); a writer refuses to make one.
TEST(SafetensorsMalformed, AHeaderOfTooManyEntriesIsRefused) {
  constexpr int kEntries = 250'001;
  std::string header = "{";
  for (int i = 0; i < kEntries; ++i) {
    header += cat(i ? "," : "", "\"t", i, "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}");
  }
  header += "}";
  EXPECT_EQ(problem(header), "the header has more than 250,000 entries, the most a file may hold");
  SafetensorsFile file;
  for (int i = 0; i < kEntries; ++i) file.tensors.push_back(host_tensor(cat("t", i), "U8", {0}, nullptr, 0));
  try {
    (void)encode_safetensors(file);
    ADD_FAILURE() << "a file of " << kEntries << " tensors was written";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(": 250,001 header entries, more than the 250,000 a file may hold"),
              std::string::npos)
        << e.what();
  }
}

// The offsets must tile the data area: from 0, in order, no gap, no overlap,
// to the end of the file.
TEST(SafetensorsMalformed, OffsetsThatDoNotTileTheData) {
  const std::string a = R"("a":{"dtype":"U8","shape":[4],"data_offsets":)";
  const std::string b = R"("b":{"dtype":"U8","shape":[4],"data_offsets":)";
  // header {"a":...,"b":...} is 105 bytes (106 with an offset of two digits): the data begins at byte 113 (114).
  auto header = [&](const std::string& offsets_a, const std::string& offsets_b) {
    return "{" + a + offsets_a + "}," + b + offsets_b + "}}";
  };
  ASSERT_EQ(header("[0,4]", "[4,8]").size(), 105u);
  EXPECT_EQ(problem(header("[0,4]", "[4,8]"), "01234567"), "(accepted)");
  EXPECT_EQ(problem(header("[0,4]", "[4,8]"), "0123456"),
            "tensor 'b' ends at byte 121 (data offset 8), past the end of the file at byte 120: the file is truncated");
  // An end so large that the file's byte would pass 2^64 is said so, not wrapped.
  const std::string huge = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[18446744073709551600,18446744073709551608]}})";
  EXPECT_EQ(problem(huge, "01234567").substr(0, 105),
            "tensor 'a' ends at byte 2^64 or beyond (data offset 18,446,744,073,709,551,608), past the end of the file");
  EXPECT_EQ(problem(header("[0,4]", "[6,10]"), "0123456789"),
            "bytes 118 to 120 belong to no tensor: 'a' ends at data offset 4, 'b' begins at 6");
  EXPECT_EQ(problem(header("[2,6]", "[6,10]"), "0123456789"),
            "bytes 114 to 116 belong to no tensor: the first tensor, 'a', begins at data offset 2, not 0");
  EXPECT_EQ(problem(header("[0,4]", "[2,6]"), "012345"),
            "tensor 'b' (data offsets 2 to 6, bytes 115 on) overlaps 'a', which ends at data offset 4");
  EXPECT_EQ(problem(header("[0,4]", "[4,8]"), "0123456789"),
            "2 trailing bytes (121 to 123) belong to no tensor");
  EXPECT_EQ(problem("{}", "xyz"), "3 trailing bytes (10 to 13) belong to no tensor");
  // In data order, whatever the header's order: b's bytes first here.
  const SafetensorsFile swapped = decode_safetensors(file_of(header("[4,8]", "[0,4]"), "bbbbaaaa"), "f");
  ASSERT_EQ(swapped.tensors.size(), 2u);
  EXPECT_EQ(swapped.tensors[0].name, "b");
  EXPECT_EQ(static_cast<char>(swapped.tensors[1].bytes[0]), 'a');
}

TEST(SafetensorsMalformed, TheFileItself) {
  testing::TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  for (const auto& read : {read_safetensors, read_safetensors_header}) {
    try {
      read(missing);
      FAIL();
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()), missing + ": cannot read: No such file or directory");
    }
    try {
      read(dir.path());
      FAIL();
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()), dir.path() + ": cannot read: Is a directory");
    }
  }
  // A truncated file: the header is checked against the file's size without reading the data.
  const std::vector<std::byte> bytes = file_of(entry(R"("dtype":"F32","shape":[4],"data_offsets":[0,16])"), "0123");
  std::ofstream(dir.file("t.safetensors"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  try {
    read_safetensors_header(dir.file("t.safetensors"));
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("t.safetensors") +
                                         ": tensor 'w' ends at byte 79 (data offset 16), past the end of the file at "
                                         "byte 67: the file is truncated");
  }
  EXPECT_THROW(safetensors_element_size("F4"), DataError);
  EXPECT_EQ(safetensors_element_size("BF16"), 2u);
  try {
    safetensors_element_size("Q8");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown safetensors dtype \"Q8\" (known: BOOL,"), std::string::npos);
  }
}

}  // namespace
}  // namespace glassbox
