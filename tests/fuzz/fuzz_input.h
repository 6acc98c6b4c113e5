// tests/fuzz/fuzz_input.h: what every fuzz target shares: how the fuzzer's
// bytes become a command line, and what counts as a finding.
//
// Input format: the words of a command line joined by NUL bytes, as the kernel
// lays out argv (no word can contain a NUL, so every command line has exactly
// one encoding, except a lone empty word: the empty input is "no words").
//   "summary\0VGG16\0--batch\08"  ->  {"summary", "VGG16", "--batch", "8"}
// Seeds are written by tests/fuzz/make_seeds.sh; read one with
// `tr '\0' ' ' < FILE`.
//
// Findings: a glassbox::Error (ConfigError, SizeError, ...) is the expected
// answer to bad input and is swallowed. Anything else is a bug: another
// exception (std::out_of_range from a stoi, std::length_error, bad_alloc from
// an absurd size) is printed and aborts; a crash, a sanitizer report, or a
// broken FUZZ_CHECK aborts. libFuzzer saves the input of any abort as
// crash-<sha1>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "tensor/error.h"

namespace glassbox::fuzz {

inline std::vector<std::string> split_words(const uint8_t* data, size_t size) {
  std::vector<std::string> words;
  if (size == 0) return words;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (true) {
    const size_t nul = text.find('\0', start);
    words.emplace_back(text.substr(start, nul == std::string_view::npos ? std::string_view::npos : nul - start));
    if (nul == std::string_view::npos) return words;
    start = nul + 1;
  }
}

// Runs body(): a glassbox::Error is a correct answer to bad input; any other
// exception is a finding, printed with its type before aborting.
template <typename Body>
void expect_errors(const Body& body) {
  try {
    body();
  } catch (const Error&) {
    // the parser rejected the input, as it should: nothing to report
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: a non-Glassbox exception escaped: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

}  // namespace glassbox::fuzz

// An invariant of an accepted input; abort() (a crash to libFuzzer) if broken.
#define FUZZ_CHECK(condition)                                                                \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
