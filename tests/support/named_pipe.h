// tests/support/named_pipe.h: testing that a reader refuses a named pipe
// instead of blocking on it (tensor/input_file.h).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

namespace glassbox::testing {

// Runs `f` on a thread of its own and returns what it returns. A reader
// that opens the named pipe `fifo` as a file blocks until a writer comes:
// after 10 s this opens the other end itself and fails the test, so that a
// reader that blocks fails the test instead of hanging it.
template <typename F>
auto without_blocking_on(const std::string& fifo, const F& f) {
  auto result = std::async(std::launch::async, f);
  if (result.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "reading " << fifo << " blocked";
    while (result.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // succeeds once a reader waits
      if (fd >= 0) ::close(fd);
    }
  }
  return result.get();
}

}  // namespace glassbox::testing
