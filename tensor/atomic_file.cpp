// tensor/atomic_file.cpp: POSIX: mkstemp beside the target, write, fsync,
// rename (atomic within one file system, which "beside" guarantees), then
// fsync the directory (Note [Directory fsync]).
#include "tensor/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "tensor/error.h"

namespace glassbox {

// Where the file's name is too long for the suffix (a name of up to 255
// bytes is valid, and the suffix is 11), the name is cut in the temporary's
// name only, so that every valid path can be written. A checkpoint's names
// are short: the cut never hides one of their temporaries from the save that
// removes a killed run's.
std::string temporary_pattern(const std::string& path) {
  constexpr size_t kSuffix = 11;  // ".tmp.XXXXXX"
  const size_t slash = path.find_last_of('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  const long name_max = ::pathconf(name_start == 0 ? "." : path.substr(0, name_start).c_str(), _PC_NAME_MAX);
  const size_t limit = name_max > static_cast<long>(kSuffix) ? static_cast<size_t>(name_max) : 255;
  std::string kept = path;
  if (path.size() - name_start + kSuffix > limit) {
    size_t cut = name_start + (limit - kSuffix);
    // Not inside a UTF-8 character: some file systems take UTF-8 names only.
    while (cut > name_start && (static_cast<unsigned char>(path[cut]) & 0xC0) == 0x80) --cut;
    kept.resize(cut);
  }
  return kept + ".tmp.XXXXXX";
}

namespace {

// An open temporary file (temporary_pattern), removed unless kept.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path) : name_(temporary_pattern(path)) {
    std::vector<char> pattern(name_.begin(), name_.end());
    pattern.push_back('\0');
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) throw Error(cat("cannot write '", path, "': ", std::strerror(errno)));
    name_ = pattern.data();
  }
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!kept_) ::unlink(name_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  int fd() const { return fd_; }
  // Closes the file and reports close's own errors (NFS reports late).
  bool close() {
    const int status = ::close(fd_);
    fd_ = -1;
    return status == 0;
  }
  const std::string& name() const { return name_; }
  void keep() { kept_ = true; }

 private:
  std::string name_;
  int fd_ = -1;
  bool kept_ = false;
};

// Note [Directory fsync]: the rename lives in the directory, and only an
// fsync of the directory makes it survive a power cut or a kernel crash (a
// killed process needs nothing: the kernel finishes the rename either way).
// Without it, files renamed one after another (a checkpoint's data files,
// then `latest`) may reach the disk in any order. Best effort: the new file
// is already in place, and some file systems refuse fsync on a directory.
void sync_directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Note [Writing over a link or a device]: the rename replaces the directory
// entry itself. A symbolic link would become a regular file while the file
// it names kept the old contents, and a pipe or a device node (/dev/stdout,
// /dev/null) would be replaced by a regular file for every later user. So
// the file written is the regular file the path names, through any links,
// and a path that names anything else (a directory, a pipe, a device) is
// refused before anything is written.
std::string regular_file_at(const std::string& path) {
  struct stat there {};
  const bool trailing_slash = !path.empty() && path.back() == '/';
  const bool exists = !trailing_slash && ::stat(path.c_str(), &there) == 0;
  const int stat_error = errno;
  if (trailing_slash || (exists && !S_ISREG(there.st_mode))) {
    throw Error(cat("cannot write '", path, "': it is ",
                    trailing_slash || S_ISDIR(there.st_mode) ? "a directory" : "not a regular file",
                    ", and the output is a file: give a file's path"));
  }
  struct stat entry {};
  if (::lstat(path.c_str(), &entry) != 0 || !S_ISLNK(entry.st_mode)) return path;
  if (!exists && stat_error != ENOENT) {  // a loop of links (ELOOP), a link into a place it may not search
    throw Error(cat("cannot write '", path, "': it is a symbolic link that cannot be followed: ",
                    std::strerror(stat_error)));
  }
  if (!exists) throw Error(cat("cannot write '", path, "': it is a symbolic link to a file that does not exist"));
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) throw Error(cat("cannot write '", path, "': ", std::strerror(errno)));
  std::string target(resolved);
  std::free(resolved);
  return target;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  std::error_code a_error, b_error;
  const fs::path a_path = fs::weakly_canonical(fs::absolute(a, a_error), a_error);
  const fs::path b_path = fs::weakly_canonical(fs::absolute(b, b_error), b_error);
  return !a_error && !b_error && a_path == b_path;
}

void check_writable(const std::string& path) {
  // Before hours of work: what the rename would say only at the end.
  const std::string target = regular_file_at(path);
  TemporaryFile probe(target);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  write_file_atomically(path, std::span<const std::string_view>(&contents, 1));
}

bool write_all(int fd, std::string_view bytes, size_t& written) {
  written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    written += static_cast<size_t>(n);
  }
  return true;
}

void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces) {
  const std::string target = regular_file_at(path);  // Note [Writing over a link or a device]
  TemporaryFile file(target);
  auto fail = [&](const char* step) { throw Error(cat("writing '", path, "' failed (", step, "): ", std::strerror(errno))); };
  // mkstemp makes the file 0600; give it the permissions a new file normally gets.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(file.fd(), 0666 & ~mask) != 0) fail("fchmod");
  for (const std::string_view contents : pieces) {
    size_t written = 0;
    if (!write_all(file.fd(), contents, written)) fail("write");
  }
  if (::fsync(file.fd()) != 0) fail("fsync");
  if (!file.close()) fail("close");
  if (::rename(file.name().c_str(), target.c_str()) != 0) fail("rename");
  file.keep();
  sync_directory_of(target);
}

}  // namespace glassbox
