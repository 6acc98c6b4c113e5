// tests/test_safetensors.cpp: the safetensors reader and writer
// (tensor/safetensors.h): an exact round trip, a file written by Python's
// safetensors read and written again byte for byte, and every way a file can
// be malformed refused with a message naming the file, where and what.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "tensor/error.h"
#include "tensor/safetensors.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

template <typename T>
HostTensor tensor_of(std::string name, std::string dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  HostTensor t{.name = std::move(name), .dtype = std::move(dtype), .shape = std::move(shape)};
  t.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

template <typename T>
std::vector<T> values_of(const HostTensor& t) {
  std::vector<T> values(t.bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), t.bytes.data(), t.bytes.size());
  return values;
}

std::vector<std::byte> bytes_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  const std::string s = contents.str();
  std::vector<std::byte> bytes(s.size());
  std::memcpy(bytes.data(), s.data(), s.size());
  return bytes;
}

std::string text_of(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void expect_same(const SafetensorsFile& a, const SafetensorsFile& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].bytes, b.tensors[i].bytes) << a.tensors[i].name;
  }
}

SafetensorsFile sample_file() {
  SafetensorsFile file;
  file.metadata = {{"format", "pt"}, {"net", "LeNet"}, {"note", "ünïcode and \"quotes\""}};
  file.tensors.push_back(tensor_of<float>("conv1.weight", "F32", {2, 3}, {1.5f, -2.25f, 0.0f, -0.0f, 1e-30f, 3e38f}));
  file.tensors.push_back(tensor_of<int64_t>("bn1.num_batches_tracked", "I64", {}, {int64_t{1} << 40}));
  file.tensors.push_back(tensor_of<int32_t>("labels", "I32", {3}, {-1, 0, 2147483647}));
  file.tensors.push_back(tensor_of<uint16_t>("half", "F16", {1, 2}, {0x3c00, 0xfbff}));
  file.tensors.push_back(tensor_of<uint16_t>("brain", "BF16", {2}, {0x3f80, 0xc000}));
  file.tensors.push_back(tensor_of<uint8_t>("odd", "U8", {5}, {1, 2, 3, 4, 5}));  // data not a multiple of 4
  file.tensors.push_back(tensor_of<float>("none", "F32", {0, 3}, {}));           // no elements
  file.tensors.push_back(tensor_of<double>("after", "F64", {1}, {0.1}));
  return file;
}

TEST(Safetensors, RoundTripIsExact) {
  testing::TempDir dir;
  const SafetensorsFile file = sample_file();
  write_safetensors(dir.file("m.safetensors"), file);
  expect_same(read_safetensors(dir.file("m.safetensors")), file);
  EXPECT_EQ(values_of<float>(read_safetensors(dir.file("m.safetensors")).tensors[0])[5], 3e38f);

  // The header alone: the same names, dtypes, shapes and metadata, no bytes.
  const SafetensorsFile header = read_safetensors_header(dir.file("m.safetensors"));
  EXPECT_EQ(header.metadata, file.metadata);
  ASSERT_EQ(header.tensors.size(), file.tensors.size());
  for (size_t i = 0; i < header.tensors.size(); ++i) {
    EXPECT_EQ(header.tensors[i].name, file.tensors[i].name);
    EXPECT_EQ(header.tensors[i].shape, file.tensors[i].shape);
    EXPECT_TRUE(header.tensors[i].bytes.empty());
  }
  EXPECT_EQ(header.find("labels")->dtype, "I32");
  EXPECT_EQ(header.find("missing"), nullptr);
  EXPECT_EQ(file.find("bn1.num_batches_tracked")->numel(), 1);  // a scalar
  EXPECT_EQ(file.find("none")->numel(), 0);
}

TEST(Safetensors, TheHeaderIsCompactJsonPaddedWithSpacesToEightBytes) {
  testing::TempDir dir;
  SafetensorsFile file{.metadata = {{"k", "v"}}};
  file.tensors.push_back(tensor_of<float>("w", "F32", {2}, {1.0f, 2.0f}));
  write_safetensors(dir.file("p.safetensors"), file);
  const std::string bytes = text_of(bytes_of_file(dir.file("p.safetensors")));
  const std::string json = R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const size_t padded = (json.size() + 7) / 8 * 8;
  ASSERT_EQ(bytes.size(), 8 + padded + 8);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), padded);
  EXPECT_EQ(bytes.substr(1, 7), std::string(7, '\0'));
  EXPECT_EQ(bytes.substr(8, padded), json + std::string(padded - json.size(), ' '));
  EXPECT_EQ(encode_safetensors(file), bytes);
  // No metadata, no "__metadata__" key (as Python writes metadata=None).
  EXPECT_EQ(encode_safetensors({}), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
}

// tests/data/python.safetensors was written by safetensors.torch.save_file
// (tests/data/make_python_safetensors.py): read, then written again by
// Glassbox byte for byte.
TEST(Safetensors, ReadsAndRewritesAFileWrittenByPython) {
  const std::string path = std::string(GLASSBOX_TEST_DATA_DIR) + "/python.safetensors";
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{
                               {"format", "pt"}, {"made_by", "tests/data/make_python_safetensors.py"}}));
  std::vector<std::string> names;
  for (const HostTensor& t : file.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bn.num_batches_tracked", "conv.weight", "empty", "half", "bytes"}));
  const HostTensor& tracked = *file.find("bn.num_batches_tracked");
  EXPECT_EQ(tracked.dtype, "I64");
  EXPECT_TRUE(tracked.shape.empty());
  EXPECT_EQ(values_of<int64_t>(tracked), std::vector<int64_t>{7});
  const HostTensor& weight = *file.find("conv.weight");
  EXPECT_EQ(weight.shape, (std::vector<int64_t>{2, 3, 2, 2}));
  const std::vector<float> w = values_of<float>(weight);
  ASSERT_EQ(w.size(), 24u);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w[i], static_cast<float>(i) / 8 - 1) << i;
  EXPECT_EQ(values_of<uint16_t>(*file.find("half")), (std::vector<uint16_t>{0x3e00, 0xc000, 0x7bff}));
  EXPECT_EQ(values_of<uint8_t>(*file.find("bytes")), (std::vector<uint8_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(file.find("empty")->shape, (std::vector<int64_t>{0, 3}));

  const std::vector<std::byte> python = bytes_of_file(path);
  EXPECT_EQ(encode_safetensors(file), text_of(python)) << "Glassbox writes what Python wrote";
  expect_same(decode_safetensors(python, path), file);
}

// ---- Writing: what cannot be written is refused before anything is -------------

std::string write_error(const SafetensorsFile& file) {
  testing::TempDir dir;
  try {
    write_safetensors(dir.file("w.safetensors"), file);
  } catch (const ConfigError& e) {
    EXPECT_FALSE(std::filesystem::exists(dir.file("w.safetensors")));
    const std::string what = e.what();
    const std::string prefix = "cannot write " + dir.file("w.safetensors") + ": ";
    EXPECT_EQ(what.rfind(prefix, 0), 0u) << what;
    return what.substr(prefix.size());
  }
  return "(written)";
}

SafetensorsFile one(HostTensor t) { return {.tensors = {std::move(t)}}; }

TEST(Safetensors, WritingRefusesWhatTheFormatCannotHold) {
  const HostTensor w = tensor_of<float>("w", "F32", {2}, {1, 2});
  HostTensor unnamed = w;
  unnamed.name = "";
  EXPECT_EQ(write_error(one(unnamed)), "a tensor has an empty name");
  HostTensor metadata = w;
  metadata.name = "__metadata__";
  EXPECT_EQ(write_error(one(metadata)), "a tensor is named \"__metadata__\", the format's key for metadata");
  EXPECT_EQ(write_error({.tensors = {w, tensor_of<float>("w", "F32", {1}, {3})}}), "two tensors are named 'w'");
  HostTensor unknown = w;
  unknown.dtype = "F31";
  EXPECT_NE(write_error(one(unknown)).find("tensor 'w': unknown dtype \"F31\" (known: BOOL, U8, I8,"),
            std::string::npos);
  HostTensor negative = w;
  negative.shape = {-2, -1};
  EXPECT_EQ(write_error(one(negative)), "tensor 'w': shape (-2, -1) has a negative size");
  HostTensor short_bytes = w;
  short_bytes.shape = {3};
  EXPECT_EQ(write_error(one(short_bytes)), "tensor 'w': F32 (3) takes 12 bytes, it has 8");
  HostTensor huge = w;
  huge.shape = {int64_t{1} << 62, 16};
  EXPECT_EQ(write_error(one(huge)), "tensor 'w': F32 (4611686018427387904, 16) takes more than 2^64 bytes, it has 8");
  HostTensor latin1 = w;
  latin1.name = "caf\xe9";
  EXPECT_EQ(write_error(one(latin1)), "a tensor name is not UTF-8 text from byte 3 on ('caf\\xe9'); a safetensors "
                                      "header is JSON, which holds UTF-8 only");
  EXPECT_EQ(write_error({.metadata = {{"config.data", "folder:img\xff" "dir"}}}),
            "metadata entry \"config.data\" is not UTF-8 text from byte 10 on ('folder:img\\xffdir'); a safetensors "
            "header is JSON, which holds UTF-8 only");
  EXPECT_EQ(write_error({.metadata = {{"k\xff", "v"}}}),
            "a metadata key is not UTF-8 text from byte 1 on ('k\\xff'); a safetensors header is JSON, which holds "
            "UTF-8 only");
}

TEST(Safetensors, AWriteThatFailsNamesThePath) {
  testing::TempDir dir;
  const std::string path = dir.file("missing/m.safetensors");
  try {
    write_safetensors(path, sample_file());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '" + path + "': No such file or directory");
  }
}

}  // namespace
}  // namespace glassbox
