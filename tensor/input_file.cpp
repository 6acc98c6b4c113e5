// tensor/input_file.cpp: POSIX stat, open(O_NONBLOCK), fstat, read.
#include "tensor/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tensor/error.h"
#include "tensor/grouped.h"

namespace glassbox {
namespace {

// What a path that is not a regular file is, worded as the system words its
// reasons (a directory in its own words: "Is a directory").
std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return std::strerror(EISDIR);
  const char* what = S_ISFIFO(mode)  ? "Is a named pipe"
                     : S_ISCHR(mode) ? "Is a character device"
                     : S_ISBLK(mode) ? "Is a block device"
                     : S_ISSOCK(mode) ? "Is a socket"
                                      : "Is something else";
  return cat(what, ", not a regular file");
}

[[noreturn]] void cannot_read(const std::string& path, const std::string& reason) {
  throw DataError(cat(path, ": cannot read: ", reason));
}

// Note [A limit is not a bad file]: open() fails with EMFILE, ENFILE or
// ENOMEM where the process or the system has run out of descriptors or
// memory, whatever the file. Reported as a reason, such a failure would make
// a good image "unreadable" and skipped for the rest of the run (`ulimit -n 5`
// with two loader workers did), so it is an Error of the run instead.
void refuse_if_out_of_resources(const std::string& path, int error) {
  if (error != EMFILE && error != ENFILE && error != ENOMEM) return;
  throw Error(cat(path, ": cannot open: ", std::strerror(error), " (a limit of this process or the system, not a "
                  "fault of the file", error == ENOMEM ? "" : "; `ulimit -n` shows the process's descriptor limit",
                  ")"));
}

}  // namespace

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

InputFile open_regular_file(const std::string& path, std::string& reason) {
  // stat first: a device is refused without being opened (opening one can do
  // things: rewind a tape, start a watchdog).
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    refuse_if_out_of_resources(path, errno);
    reason = std::strerror(errno);
    return {};
  }
  if (!S_ISREG(info.st_mode)) {
    reason = not_regular(info.st_mode);
    return {};
  }
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    refuse_if_out_of_resources(path, errno);
    reason = std::strerror(errno);
    return {};
  }
  const auto refuse = [&](std::string why) {
    ::close(fd);
    reason = std::move(why);
    return InputFile();
  };
  if (::fstat(fd, &info) != 0) return refuse(std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return refuse(not_regular(info.st_mode));  // the path changed since stat()
  // O_NONBLOCK means nothing to a regular file's reads; it is cleared all the
  // same, so that no file system can answer a read with EAGAIN.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return refuse(std::strerror(errno));
  return InputFile(fd, static_cast<uint64_t>(std::max<off_t>(info.st_size, 0)));
}

InputFile open_regular_file(const std::string& path) {
  std::string reason;
  InputFile file = open_regular_file(path, reason);
  if (!file.is_open()) cannot_read(path, reason);
  return file;
}

bool read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view limit, std::string& contents,
                       std::string& reason) {
  const InputFile file = open_regular_file(path, reason);
  if (!file.is_open()) return false;
  max_bytes = std::min<uint64_t>(max_bytes, uint64_t{1} << 62);  // so that max_bytes + 1 cannot wrap
  auto past_limit = [&](const std::string& what) {
    reason = cat(what, ", past the limit of ", grouped(max_bytes), " for ", limit);
    return false;
  };
  if (file.size() > max_bytes) return past_limit(cat("it has ", grouped(file.size()), " bytes"));
  // The size is a hint: a file that grows or shrinks while read is read to its
  // end, or to one byte past the limit. One byte more than the size to begin
  // with, so that the end of an unchanged file is found without growing.
  contents.assign(static_cast<size_t>(file.size()) + 1, '\0');
  size_t used = 0;
  while (true) {
    if (used == contents.size()) {
      if (used > max_bytes) return past_limit("it grew while being read");
      contents.resize(static_cast<size_t>(std::min<uint64_t>(max_bytes + 1, std::max(2 * used, used + 65536))));
    }
    const ssize_t n = ::read(file.fd(), contents.data() + used, contents.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      reason = std::strerror(errno);
      return false;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (used > max_bytes) return past_limit("it grew while being read");
  contents.resize(used);
  return true;
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view limit) {
  std::string contents, reason;
  if (!read_regular_file(path, max_bytes, limit, contents, reason)) cannot_read(path, reason);
  return contents;
}

}  // namespace glassbox
