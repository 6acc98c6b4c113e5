// tests/support/command.cpp
#include "tests/support/command.h"

#include <stdio.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

namespace glassbox::testing {

CommandOutcome run_command(const std::string& command_line) {
  CommandOutcome result;
  FILE* pipe = popen((command_line + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string program_path(const std::string& built) {
  const char* dir = std::getenv("GLASSBOX_PROGRAMS_DIR");
  if (dir == nullptr || *dir == '\0') return built;
  return (std::filesystem::path(dir) / std::filesystem::path(built).filename()).string();
}

}  // namespace glassbox::testing
