// data/shared.cpp
#include "data/shared.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace glassbox {

void check_index(const Dataset& dataset, int64_t index) {
  if (index < 0 || index >= dataset.size()) {
    throw Error(cat(dataset.describe(), ": sample ", index, " is out of range [0, ", dataset.size(), ")"));
  }
}

void check_load_arguments(const Dataset& dataset, int64_t index, std::span<float> pixels) {
  check_index(dataset, index);
  const int64_t floats = dataset.sample_shape().numel();
  if (static_cast<int64_t>(pixels.size()) != floats) {
    throw ShapeError(cat(dataset.describe(), ": load() was given ", pixels.size(), " floats; one sample ",
                         dataset.sample_shape().str(), " has ", floats));
  }
}

bool read_file(const std::string& path, std::string& contents, std::string& reason) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    reason = std::strerror(errno);
    return false;
  }
  struct stat info {};
  bool ok = ::fstat(fd, &info) == 0;
  if (ok && S_ISDIR(info.st_mode)) {
    errno = EISDIR;
    ok = false;
  }
  if (ok) {
    // The size is a hint: a file that grows or shrinks while read is read to its end.
    contents.resize(static_cast<size_t>(info.st_size > 0 ? info.st_size : 0));
    size_t used = 0;
    while (true) {
      if (used == contents.size()) contents.resize(used + (used < 65536 ? 65536 : used));
      const ssize_t n = ::read(fd, contents.data() + used, contents.size() - used);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ok = false;
        break;
      }
      if (n == 0) break;
      used += static_cast<size_t>(n);
    }
    contents.resize(used);
  }
  if (!ok) reason = std::strerror(errno);
  ::close(fd);
  return ok;
}

}  // namespace glassbox
