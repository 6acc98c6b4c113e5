// tests/support/command.h: running a program as a user does, for the tests
// of the command-line tools: its exit code and everything it printed.
#pragma once

#include <string>

#include "tests/support/strings.h"  // contains(), for checking what a program printed

namespace glassbox::testing {

struct CommandOutcome {
  int exit_code = -1;  // -1 if it did not exit normally (a signal) or could not start
  std::string output;  // stdout and stderr together, in the order written
};

// Runs `command_line` through the shell, stderr joined to stdout.
CommandOutcome run_command(const std::string& command_line);

// A program of the build (glassbox, bench_nets, ...) by the path the build
// compiled in, or by its file name in $GLASSBOX_PROGRAMS_DIR where that is
// set: binaries built on one machine and run on another, in a folder of
// their own (tools/gpu_check.sh --prebuilt DIR), find each other there.
std::string program_path(const std::string& built);

}  // namespace glassbox::testing
