// tensor/grouped.h: an integer with its digits grouped by thousands,
// 47040016 -> "47,040,016": how error messages write counts and byte offsets
// and how the command line's tables write totals, spelled once for all.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>

namespace glassbox {

inline std::string grouped_digits(uint64_t magnitude) {
  std::string digits;
  int count = 0;
  do {
    if (count > 0 && count % 3 == 0) digits.insert(digits.begin(), ',');
    digits.insert(digits.begin(), static_cast<char>('0' + magnitude % 10));
    magnitude /= 10;
    ++count;
  } while (magnitude > 0);
  return digits;
}

template <std::integral T>
std::string grouped(T value) {
  if constexpr (std::is_signed_v<T>) {
    // Through uint64_t: -INT64_MIN does not fit in int64_t.
    if (value < 0) {
      std::string text = grouped_digits(~static_cast<uint64_t>(static_cast<int64_t>(value)) + 1);
      // Not `"-" + text`: inlined, GCC 12 warns of an overlapping memcpy there
      // (-Wrestrict, a false positive) in every file that includes this one.
      text.insert(text.begin(), '-');
      return text;
    }
  }
  return grouped_digits(static_cast<uint64_t>(value));
}

}  // namespace glassbox
