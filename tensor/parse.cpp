// tensor/parse.cpp: checked parsing with std::from_chars, which reads only
// what it understands and reports both where it stopped and overflow.
#include "tensor/parse.h"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tensor/error.h"
#include "tensor/grouped.h"

namespace glassbox {
namespace {

// The value as the user typed it (or a file held it), escaped as excerpt()
// escapes, so that no control byte reaches the terminal, and cut after 64
// bytes, so that a pasted file does not become a page-long error message;
// the whole length as excerpt() gives it, "... (1,048,576 bytes)".
std::string quoted(std::string_view text) {
  constexpr size_t kShown = 64;
  // Every byte escapes to at most 4 characters ("\xff"): the first kShown bytes whole.
  const std::string shown = excerpt(text.substr(0, kShown), 4 * kShown);
  if (text.size() <= kShown) return cat("'", shown, "'");
  return cat("'", shown, "...' (", grouped(static_cast<int64_t>(text.size())), " bytes)");
}

}  // namespace

std::string shortest_text(double value) {
  if (std::abs(value) < 1e15 && value == std::floor(value)) return std::to_string(static_cast<int64_t>(value));
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

int64_t parse_int(std::string_view what, std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < min || value > max) {
    throw ConfigError(cat(what, " must be an integer from ", min, " to ", max, ", got ", quoted(text)));
  }
  return value;
}

double parse_number(std::string_view what, std::string_view text, double min, double max) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  // from_chars reads "inf" and "nan" too: the isfinite check turns them away.
  const auto [stop, error] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value) || value < min || value > max) {
    throw ConfigError(
        cat(what, " must be a number from ", shortest_text(min), " to ", shortest_text(max), ", got ", quoted(text)));
  }
  return value;
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> items;
  for (size_t begin = 0;;) {
    const size_t comma = text.find(',', begin);
    items.push_back(text.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin));
    if (comma == std::string_view::npos) return items;
    begin = comma + 1;
  }
}

std::vector<int64_t> parse_growing_ints(std::string_view what, std::string_view text, int64_t min, int64_t max,
                                        std::string_view counts) {
  std::vector<int64_t> values;
  for (const std::string_view item : split_commas(text)) {
    values.push_back(parse_int(what, item, min, max));
    if (values.size() > 1 && values.back() <= values[values.size() - 2]) {
      throw ConfigError(cat(what, " ", quoted(text), ": ", counts, " must grow from left to right (",
                            values[values.size() - 2], " then ", values.back(), ")"));
    }
  }
  return values;
}

int64_t parse_bytes(std::string_view what, std::string_view text) {
  constexpr int64_t kMaxBytes = int64_t{1} << 62;
  constexpr std::pair<std::string_view, int> kUnits[] = {{"", 0}, {"B", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  const size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::string_view unit = text.substr(digits);
  for (const auto& [name, shift] : kUnits) {
    if (unit != name || digits == 0) continue;
    int64_t count = 0;
    const auto [stop, error] = std::from_chars(text.data(), text.data() + digits, count);
    if (error != std::errc() || count < 1 || count > (kMaxBytes >> shift)) break;
    return count << shift;
  }
  throw ConfigError(cat(what, " must be a size like 512MiB or 2GiB (a positive integer and B, KiB, MiB, GiB or TiB; ",
                        "at most 2^62 bytes), got ", quoted(text)));
}

size_t first_non_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;  // the range of the second byte
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) low = 0xa0;   // no overlong form
      if (lead == 0xed) high = 0x9f;  // no surrogate
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) low = 0x90;   // no overlong form
      if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      if (byte < (k == 1 ? low : 0x80) || byte > (k == 1 ? high : 0xbf)) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

std::string utf8_or_escaped(std::string_view text) {
  return first_non_utf8(text) == std::string_view::npos ? std::string(text) : excerpt(text, std::string::npos);
}

}  // namespace glassbox
