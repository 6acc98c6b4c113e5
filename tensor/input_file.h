// tensor/input_file.h: opening and reading the files Glassbox is given,
// without trusting what the path names or how large it is. Every reader of
// outside files (safetensors, IDX, text, JPEG, report JSON) goes through it.
//
// Only a regular file is read. A named pipe would block open() until some
// writer came, and a device (/dev/zero, /dev/urandom) never ends, so the
// path's type is checked with stat() before it is opened, and again with
// fstat() on a descriptor opened with O_NONBLOCK (the path can change in
// between); that never blocks. A whole-file read takes a limit, checked from
// the file's size before anything is allocated and again while reading.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace glassbox {

// An open regular file, closed when it goes; move-only.
class InputFile {
 public:
  InputFile() = default;
  InputFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~InputFile();
  InputFile(InputFile&& other) noexcept : fd_(other.fd_), size_(other.size_) { other.fd_ = -1; }
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // fstat's, when it was opened

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Opens `path` (symbolic links followed) for reading if it is a regular
// file. Otherwise returns a closed InputFile and sets `reason`: the system's
// ("No such file or directory", "Permission denied", "Is a directory") or
// what the path is instead ("Is a named pipe, not a regular file"; a
// character device, a block device, a socket). Throws Error where the
// process or the system, not the file, is out of descriptors or memory
// (Note [A limit is not a bad file], tensor/input_file.cpp).
InputFile open_regular_file(const std::string& path, std::string& reason);
// The same; a DataError "PATH: cannot read: REASON" instead of a closed file.
InputFile open_regular_file(const std::string& path);

// The whole of the regular file `path` into `contents`; false and `reason`
// (as above) otherwise, and for a file of more than `max_bytes` bytes:
// "it has 5,000,000,000 bytes, past the limit of 4,294,967,296 for LIMIT",
// where `limit` names what the limit is for and why ("an IDX file (the data
// set is held in memory whole)"). The size is checked before anything is
// allocated, and the read stops one byte past the limit (a file that grows
// while it is read is refused too).
bool read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view limit, std::string& contents,
                       std::string& reason);
// The same; a DataError "PATH: cannot read: REASON" instead of false.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view limit);

}  // namespace glassbox
