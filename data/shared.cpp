// data/shared.cpp
#include "data/shared.h"

#include "tensor/input_file.h"

namespace glassbox {

void check_index(const Dataset& dataset, int64_t index) {
  if (index < 0 || index >= dataset.size()) {
    throw Error(cat(dataset.describe(), ": sample ", index, " is out of range [0, ", dataset.size(), ")"));
  }
}

void check_load_arguments(const Dataset& dataset, int64_t index, std::span<float> pixels) {
  check_index(dataset, index);
  const int64_t floats = dataset.sample_shape().numel();
  if (static_cast<int64_t>(pixels.size()) != floats) {
    throw ShapeError(cat(dataset.describe(), ": load() was given ", pixels.size(), " floats; one sample ",
                         dataset.sample_shape().str(), " has ", floats));
  }
}

bool read_file(const std::string& path, std::string& contents, std::string& reason, uint64_t max_bytes,
               std::string_view limit) {
  return read_regular_file(path, max_bytes, limit, contents, reason);
}

}  // namespace glassbox
