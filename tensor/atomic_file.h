// tensor/atomic_file.h: files written whole or not at all. A reader (or a
// later run) sees either what the path held before or all of the new contents,
// never a half-written file, even if the disk fills up or the program is
// killed while writing.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace glassbox {

// Throws Error naming the path and the system's reason if a file cannot be
// created at `path` (a missing directory, no permission). Leaves nothing
// behind. For checking a destination before hours of work, not after.
void check_writable(const std::string& path);

// Whether `a` and `b` name one file: the same file reached through a link or
// another spelling, or, where either does not exist yet, the same path once
// made absolute and canonical. For refusing an output that would replace
// one of a command's inputs.
bool same_file(const std::string& a, const std::string& b);

// Writes all of `bytes` to the descriptor `fd`, going on after EINTR and
// after a short write. False where a write fails, errno its reason (ENOSPC
// where the system wrote nothing and gave none); `written` counts the bytes
// that went in either way.
bool write_all(int fd, std::string_view bytes, size_t& written);

// The temporary file's name for `path`, as mkstemp's pattern:
// "<path>.tmp.XXXXXX", the name cut where the file system's name limit
// leaves no room for the suffix (between UTF-8 characters, never in one).
std::string temporary_pattern(const std::string& path);

// Writes `contents` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`. Throws Error naming the path and the reason; on
// failure the temporary file is removed and `path` is untouched.
void write_file_atomically(const std::string& path, std::string_view contents);
// The same, with the contents given as pieces written one after another (a
// file's header and each tensor's bytes, without first copying them into one buffer).
void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces);

}  // namespace glassbox
