// tools/entry_point.h: what every Glassbox program does around its body, so
// that no input ends in a crash or a silent failure:
//   - every exception is caught and printed as one line, "<program>: <what>";
//   - exit codes: 0 success, 2 usage (ConfigError: a bad flag, name or value),
//     1 anything else (out of memory, a library error, a non-finite loss);
//   - standard output is flushed and checked at the end: output that could not
//     be written (a full disk, a closed pipe) is a failure, not exit 0.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "tensor/error.h"

namespace glassbox {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Flushes stdout (C and C++ streams); false, with errno set, if anything
// written to it was lost.
inline bool flush_standard_output() {
  std::cout.flush();
  errno = 0;
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  return c_ok && !std::cout.fail();
}

// Runs body() (which returns an exit code) under the rules above.
template <typename Body>
int run_program(const char* program, const Body& body) {
  int code = kExitFailure;
  try {
    code = body();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    code = kExitUsage;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of host memory (std::bad_alloc)\n", program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: an unknown exception ended the program\n", program);
  }
  if (!flush_standard_output()) {
    // errno is the reason when the final flush failed; an earlier failed
    // write (the stream remembers only that it failed) leaves it 0.
    std::fprintf(stderr, "%s: standard output is incomplete: writing it failed%s%s\n", program,
                 errno != 0 ? ": " : "", errno != 0 ? std::strerror(errno) : "");
    if (code == 0) code = kExitFailure;
  }
  return code;
}

}  // namespace glassbox
