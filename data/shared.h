// data/shared.h: what the data sources share: counts and byte offsets in
// messages with digits grouped by thousands (tensor/grouped.h, "47,040,016",
// as tensor/error.h's DataError example reads), the check of load()'s
// arguments, and a seeded integer draw that gives the same numbers with any
// standard library.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "data/dataset.h"
#include "tensor/grouped.h"

namespace glassbox {

// Throws Error for an index outside [0, size()), naming the dataset.
void check_index(const Dataset& dataset, int64_t index);
// check_index, and ShapeError for a buffer that is not one sample.
void check_load_arguments(const Dataset& dataset, int64_t index, std::span<float> pixels);

// The most bytes read_file reads of one file unless told otherwise: 4 GiB.
// A data source holds what it reads in memory (a whole IDX set, a whole text
// corpus, a JPEG while it is decoded); the largest files they are made for
// (EMNIST's 550 MB of images) are far below it.
inline constexpr uint64_t kMaxDataFileBytes = uint64_t{4} << 30;

// The whole regular file into `contents`; false with the reason otherwise
// (each caller throws its own kind of error): the system's, what the path is
// instead of a regular file (a named pipe, a device: never opened to block
// or read forever), or a size past `max_bytes`, checked before allocating
// (tensor/input_file.h). `limit` says what the limit is for, in the reason.
bool read_file(const std::string& path, std::string& contents, std::string& reason,
               uint64_t max_bytes = kMaxDataFileBytes,
               std::string_view limit = "a data file (it is held in memory whole)");

// Note [Portable draws]: std::uniform_int_distribution and
// uniform_real_distribution are implementation-defined (libstdc++ and libc++
// draw differently from the same engine), so a seeded run would change with
// the standard library. These use the engine's bits directly.
// An integer in [0, n), n >= 1 (Lemire's multiply-shift; the bias is below 2^-40 for our n).
inline int64_t draw_below(std::mt19937_64& rng, int64_t n) {
  return static_cast<int64_t>((static_cast<unsigned __int128>(rng()) * static_cast<uint64_t>(n)) >> 64);
}
// A float in [-1, 1): 24 random bits.
inline float draw_symmetric(std::mt19937_64& rng) {
  return static_cast<float>(rng() >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace glassbox
