// tools/entry_point.h: what every Glassbox program does around its body, so
// that no input ends in a crash or a silent failure:
//   - every exception is caught and printed as one line, "<program>: <what>";
//   - exit codes: 0 success, 2 usage (ConfigError: a bad flag, name or value),
//     1 anything else (out of memory, a library error, a non-finite loss);
//   - standard output is flushed and checked at the end: output that could not
//     be written (a full disk, a closed pipe, a closed stream) is a failure,
//     not exit 0;
//   - a standard stream the program was started without is held on /dev/null
//     (Note [A closed standard stream]);
//   - in a job of several ranks (mpirun, optim/communicator.h), the line says
//     which rank failed, "<program>: rank 1 of 2: <what>", and an exception
//     ends the whole job with the same exit code (abort_job), so that no other
//     rank waits for this one until its timeout.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "optim/communicator.h"
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

// "rank R of N: " in a job of several ranks, else "". Never throws: a
// malformed launcher environment (job_placement's ConfigError) is reported
// where it is read, not while reporting another error.
inline std::string rank_prefix() {
  try {
    const JobPlacement placement = job_placement();
    return placement.size > 1 ? cat("rank ", placement.rank, " of ", placement.size, ": ") : std::string();
  } catch (const std::exception&) {
    return {};
  }
}

// One error line; `what` is prefixed with this rank unless it names it
// already (CommunicationError's messages start with "rank R of N: ").
inline void print_error(const char* program, const char* what) {
  const std::string rank = rank_prefix();
  const bool named = !rank.empty() && std::string_view(what).starts_with(rank);
  std::fprintf(stderr, "%s: %s%s\n", program, named ? "" : rank.c_str(), what);
}

// Note [A closed standard stream]: a program started with descriptor 0, 1 or
// 2 closed (`glassbox train ... >&-`) gives that number to the next file it
// opens, and what it prints lands in that file: the table of epochs inside
// the --log file, bench_nets' console table in its --benchmark_out. Each
// closed one is opened on /dev/null, read-only, so that a write to it still
// fails (EBADF) as on the closed stream, and a lost stdout is still reported.
inline void hold_closed_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int held = open("/dev/null", O_RDONLY);
    if (held >= 0 && held != fd) {  // the lowest free number is `fd` itself; dup2 where it was not
      dup2(held, fd);
      close(held);
    }
  }
}

// Runs body() (which returns an exit code) under the rules above.
template <typename Body>
int run_program(const char* program, const Body& body) {
  hold_closed_standard_streams();
  // A closed pipe on stdout (`glassbox train ... | head`) makes writes fail
  // with EPIPE instead of killing the program without a word: the program
  // then stops at its next checked write (tools/cli/progress.cpp) or says so
  // at the end, and exits 1 as for a full disk.
  std::signal(SIGPIPE, SIG_IGN);
  int code = kExitFailure;
  bool threw = true;
  try {
    code = body();
    threw = false;
  } catch (const ConfigError& e) {
    print_error(program, e.what());
    code = kExitUsage;
  } catch (const std::bad_alloc&) {
    print_error(program, "out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    print_error(program, e.what());
  } catch (...) {
    print_error(program, "an unknown exception ended the program");
  }
  // The other ranks may be waiting in a collective for this one: end them too.
  if (threw && !rank_prefix().empty()) {
    flush_standard_output();
    abort_job(code);
  }
  if (!flush_standard_output()) {
    // errno is the reason when the final flush failed; an earlier failed
    // write (the stream remembers only that it failed) leaves it 0. A
    // program that stopped with an error has said why already.
    if (!threw) {
      std::fprintf(stderr, "%s: standard output is incomplete: writing it failed%s%s\n", program,
                   errno != 0 ? ": " : "", errno != 0 ? std::strerror(errno) : "");
    }
    if (code == 0) code = kExitFailure;
  }
  return code;
}

}  // namespace glassbox
