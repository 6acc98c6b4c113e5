// tests/fuzz/fuzz_safetensors.cpp: arbitrary bytes through the safetensors
// reader (decode_safetensors, tensor/safetensors.h): a DataError or a valid
// file, never a crash, another exception, a read past the bytes or an
// allocation the bytes do not justify.
//
// An accepted file must keep the format's promises: every tensor's bytes are
// its dtype and shape, all of them fit in the input, and written again
// (encode_safetensors) it reads back the same, and writes the same bytes a
// second time. The input is the file's bytes as they are (not NUL-separated
// words as for the command-line targets). Seeds: make_safetensors_seeds.py.
#include <cstring>
#include <span>

#include "tensor/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

bool same(const SafetensorsFile& a, const SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const HostTensor &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.bytes != y.bytes) return false;
  }
  return true;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  fuzz::expect_errors([&] {
    const SafetensorsFile file = decode_safetensors(input, "fuzz.safetensors");
    size_t total = 0;
    bool empty_name = false;
    for (const HostTensor& t : file.tensors) {
      FUZZ_CHECK(t.bytes.size() == static_cast<size_t>(t.numel()) * safetensors_element_size(t.dtype));
      total += t.bytes.size();
      empty_name = empty_name || t.name.empty();
    }
    FUZZ_CHECK(total + 8 <= size);
    // The writer refuses an empty name (the reader takes one, as the format does).
    if (empty_name) return;
    const std::string again = encode_safetensors(file);
    const SafetensorsFile back = decode_safetensors(bytes_of(again), "again.safetensors");
    FUZZ_CHECK(same(file, back));
    FUZZ_CHECK(encode_safetensors(back) == again);
  });
  return 0;
}
