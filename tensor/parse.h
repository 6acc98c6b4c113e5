// tensor/parse.h: numbers typed by a user (flag values, device indices),
// checked in full. "8abc", "1e3", " 8", "" and values out of range are errors
// that name the flag and the value; nothing is truncated, wrapped or guessed
// (atoi and stoi do all three, or throw std::out_of_range).
//
//   const int batch = parse_int("--batch", text, 1, kMaxInt);   // "--batch must be an integer from 1 to ..."
//   const double lr = parse_number("--lr", text, 0.0, 100.0);    // finite, in range
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox {

inline constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

// All of `text` as a base-10 integer (digits, an optional leading '-') in
// [min, max]. Throws ConfigError:
//   "<what> must be an integer from <min> to <max>, got '<text>'".
int64_t parse_int(std::string_view what, std::string_view text, int64_t min, int64_t max);

// All of `text` as a finite decimal number ("0.01", "5e-4") in [min, max].
// Throws ConfigError: "<what> must be a number from <min> to <max>, got '<text>'".
double parse_number(std::string_view what, std::string_view text, double min, double max);

// The shortest text that parse_number reads back as exactly `value`
// ("0.05", "1e-08", "1000000", "0.0123456789"): for numbers written down to
// be read again, as a checkpoint's settings are.
std::string shortest_text(double value);

// Every item of a comma-separated list, empty ones included: "1,2" -> {1, 2},
// "1,,2" -> {1, "", 2}, "1," -> {1, ""}, "" -> {""}. An empty item reaches
// the caller's parse, which refuses it by name (std::getline would drop a
// last empty item, and "1,2," would pass as "1,2").
std::vector<std::string_view> split_commas(std::string_view text);

// "1,2,4": integers in [min, max], each greater than the one before, as the
// flags that list device, worker or batch counts take them. Throws
// ConfigError: parse_int's error for an item (an empty one too), or
// "<what> <text>: <counts> must grow from left to right (2 then 2)".
std::vector<int64_t> parse_growing_ints(std::string_view what, std::string_view text, int64_t min, int64_t max,
                                        std::string_view counts);

// A size in bytes: a positive integer and an optional binary unit, "4096",
// "512MiB", "2GiB" (B, KiB, MiB, GiB, TiB), at most 2^62 bytes. Throws
// ConfigError: "<what> must be a size like 512MiB or 2GiB ..., got '<text>'".
int64_t parse_bytes(std::string_view what, std::string_view text);

// Where `text` stops being UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF): the offset of the first byte that
// starts no valid sequence, or npos for UTF-8 text. A safetensors header is
// JSON, which holds UTF-8 text only; a Linux path is any bytes.
size_t first_non_utf8(std::string_view text);

// `text` as it is where it is UTF-8, else escaped as excerpt() escapes bytes
// ("w\xe9.safetensors"): a path or a word for a format that holds UTF-8 text
// only (safetensors metadata, JSON), where nothing reads it back as a path.
std::string utf8_or_escaped(std::string_view text);

}  // namespace glassbox
