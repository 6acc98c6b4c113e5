// tensor/safetensors.h: reading and writing safetensors files, the format
// PyTorch's safetensors package and Hugging Face use for weights.
//
// Layout (https://github.com/huggingface/safetensors, "Format"):
//   8 bytes    N, little-endian unsigned: the header's length
//   N bytes    JSON: {"__metadata__": {"key": "value", ...},
//                     "name": {"dtype": "F32", "shape": [64, 3, 7, 7], "data_offsets": [begin, end]}, ...}
//              padded with spaces to a multiple of 8 bytes, as the Python library writes it
//   the rest   the tensors' bytes, little-endian, row-major, at [begin, end) from here
// Offsets must tile the data area exactly, in order, with no gaps or overlaps.
// The JSON is parsed and written with nlohmann-json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace glassbox {

// One tensor on the host, as the file holds it.
struct HostTensor {
  std::string name;
  std::string dtype;           // the file's names: "F32", "I64", "I32", "F16", "BF16", "U8", ...
  std::vector<int64_t> shape;  // [] for a scalar; a size may be 0 (no elements)
  std::vector<std::byte> bytes;

  int64_t numel() const;
};

// A HostTensor holding a copy of `bytes` bytes at `data`, as a file would
// hold them (dtype and shape are not checked here; write_safetensors checks them).
HostTensor host_tensor(std::string name, std::string dtype, std::vector<int64_t> shape, const void* data,
                       size_t bytes);

// Bytes per element of a safetensors dtype name; throws DataError for an
// unknown one, and for the sub-byte types (F4, F6_*), which Glassbox does not read.
size_t safetensors_element_size(const std::string& dtype);

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // "__metadata__": strings only, as the format allows
  std::vector<HostTensor> tensors;              // in data order

  const HostTensor* find(const std::string& name) const;  // null if absent
};

// Writes the tensors in the order given, with `metadata`, through
// write_file_atomically (tensor/atomic_file.h): a reader sees the old file or
// the whole new one. Throws ConfigError for a duplicate or empty name, a
// name "__metadata__", an unknown dtype, a negative size, text that is not
// UTF-8, or bytes that do not match dtype and shape; Error naming the path
// for an I/O failure. Memory: the tensors' bytes are written from where they
// are, not copied into one buffer first.
void write_safetensors(const std::string& path, const SafetensorsFile& file);

// Reads a whole file. Throws DataError naming the path, and the byte offset and the problem:
// too short for its header length, a header that is not JSON or not the
// format's, an unknown dtype, offsets that do not match the shape or do not
// tile the data, trailing bytes. A missing or unreadable file is a DataError
// too, with the system's reason, and so is a path that is not a regular file
// (a directory, a named pipe, a device), refused without blocking or reading
// it (tensor/input_file.h). Every tensor's bytes are read straight into its
// HostTensor: the file is never held twice, and nothing is allocated before
// the header's length and the tensors' offsets are checked against the
// file's size. Time is linear in the header (n log n in its tensors, sorted
// by offset); names and tokens from the file are quoted as excerpts
// (tensor/error.h).
SafetensorsFile read_safetensors(const std::string& path);

// The header alone: names, dtypes, shapes and metadata, every tensor's
// `bytes` left empty. Checked as read_safetensors checks it (the offsets
// against the file's size too), without reading the data.
SafetensorsFile read_safetensors_header(const std::string& path);

// The same format in memory, for tests and the fuzzer (tests/fuzz/fuzz_safetensors.cpp).
// decode_safetensors checks as read_safetensors does; `path` names the bytes
// in its messages. encode_safetensors returns what write_safetensors writes.
SafetensorsFile decode_safetensors(std::span<const std::byte> bytes, const std::string& path);
std::string encode_safetensors(const SafetensorsFile& file);

}  // namespace glassbox
