// tests/test_atomic_file.cpp: a file is written whole or not at all, and a
// failure names the path, the step that failed and the system's reason
// (tensor/atomic_file.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/atomic_file.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

// A fresh directory under /tmp, removed with everything in it.
struct TemporaryDirectory {
  std::string path;
  TemporaryDirectory() {
    char pattern[] = "/tmp/glassbox-atomic-file-XXXXXX";
    path = mkdtemp(pattern) ? pattern : "";
  }
  ~TemporaryDirectory() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string contents_of(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(AtomicFile, WritesTheWholeFileAndNothingElse) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = dir.path + "/r.json";
  write_file_atomically(path, "{\"a\": 1}\n");
  write_file_atomically(path, "{\"b\": 2}\n");  // replaces it
  EXPECT_EQ(contents_of(path), "{\"b\": 2}\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"r.json"}) << "a temporary file was left behind";
}

// Pieces (a safetensors header and each tensor's bytes) are written one
// after the other, empty ones too.
TEST(AtomicFile, PiecesAreWrittenInOrder) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = dir.path + "/m.safetensors";
  const std::vector<std::string_view> pieces = {"head", "", "er", std::string_view("\0x", 2)};
  write_file_atomically(path, pieces);
  EXPECT_EQ(contents_of(path), std::string("header\0x", 8));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
}

TEST(AtomicFile, CannotWriteNamesThePathAndTheReason) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = dir.path + "/missing/r.json";
  try {
    check_writable(path);
    FAIL() << "a file in a missing directory was writable";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '" + path + "': No such file or directory");
  }
}

// A directory is refused by the check, before any work, not by the rename
// at the end; with or without its trailing slash.
TEST(AtomicFile, ADirectoryIsNotWritableAsAFile) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  for (const std::string& path : {dir.path, dir.path + "/"}) {
    try {
      check_writable(path);
      FAIL() << "a directory was writable as a file: " << path;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "cannot write '" + path + "': it is a directory, and the output is a file: give a file's path");
    }
  }
  EXPECT_NO_THROW(check_writable(dir.path + "/new.json"));
}

// A file's name may be as long as the file system takes (255 bytes here):
// the temporary beside it, 11 bytes longer, is cut to fit, and the file is
// written whole under its own name, twice (a second write replaces the first).
TEST(AtomicFile, ANameOfTheLongestLengthIsWritten) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  for (const size_t length : {245u, 250u, 255u}) {
    const std::string name(length, 'a' + static_cast<char>(length % 26));
    const std::string path = dir.path + "/" + name;
    write_file_atomically(path, "first\n");
    write_file_atomically(path, "second\n");
    EXPECT_EQ(contents_of(path), "second\n") << length << " bytes";
  }
  // "x" and 127 two-byte characters, 255 bytes: the 244 bytes the suffix
  // leaves end inside a character; the cut falls before it.
  std::string accented = "x";
  for (int i = 0; i < 127; ++i) accented += "\xc3\xa9";
  const std::string pattern = temporary_pattern(dir.path + "/" + accented);
  const std::string kept = pattern.substr(dir.path.size() + 1, pattern.size() - dir.path.size() - 1 - 11);
  EXPECT_EQ(kept.size(), 243u) << "255 bytes less the suffix, less the half character";
  EXPECT_EQ(kept, accented.substr(0, 243));
  EXPECT_EQ(pattern.substr(pattern.size() - 11), ".tmp.XXXXXX");
  EXPECT_EQ(temporary_pattern(dir.path + "/short"), dir.path + "/short.tmp.XXXXXX");
  write_file_atomically(dir.path + "/" + accented, "third\n");
  EXPECT_EQ(contents_of(dir.path + "/" + accented), "third\n");
  EXPECT_EQ(dir.entries().size(), 4u) << "a temporary file was left behind";
}

// A directory is refused before a temporary file is made, and left as it was.
TEST(AtomicFile, WritingOverADirectoryIsRefusedAndLeavesNothingBehind) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = dir.path + "/results";
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  try {
    write_file_atomically(path, "{}\n");
    FAIL() << "wrote a file over a directory";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot write '" + path + "': it is a directory, and the output is a file: give a file's path");
  }
  EXPECT_TRUE(std::filesystem::is_directory(path));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"results"}) << "a temporary file was left behind";
}

// A step that fails after the temporary file is made (here the write, past
// the process's file-size limit) is named, and the old file and no temporary remain.
TEST(AtomicFile, AFailedStepIsNamedAndLeavesNothingBehind) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = dir.path + "/results.json";
  write_file_atomically(path, "old\n");
  struct rlimit before {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  struct rlimit small = before;
  small.rlim_cur = 4096;
  void (*previous)(int) = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG from write, not the signal's core dump
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    write_file_atomically(path, std::string(8192, 'x'));
  } catch (const Error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(error, "writing '" + path + "' failed (write): File too large");
  EXPECT_EQ(contents_of(path), "old\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"results.json"}) << "a temporary file was left behind";
}

// Note [Writing over a link or a device]: a pipe is refused and stays a
// pipe; through a symbolic link the file it names is written and the link stays.
TEST(AtomicFile, APipeIsRefusedAndALinkIsFollowed) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string pipe = dir.path + "/pipe";
  ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
  for (auto write : {+[](const std::string& p) { check_writable(p); },
                     +[](const std::string& p) { write_file_atomically(p, "{}\n"); }}) {
    try {
      write(pipe);
      FAIL() << "wrote over a pipe";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "cannot write '" + pipe + "': it is not a regular file, and the output is a file: give a file's path");
    }
    EXPECT_TRUE(std::filesystem::is_fifo(pipe));
  }
  const std::string file = dir.path + "/real.json", link = dir.path + "/link.json";
  write_file_atomically(file, "old\n");
  std::filesystem::create_symlink(file, link);
  write_file_atomically(link, "new\n");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(contents_of(file), "new\n");
  const std::string dangling = dir.path + "/dangling.json";
  std::filesystem::create_symlink(dir.path + "/missing.json", dangling);
  try {
    write_file_atomically(dangling, "x");
    FAIL() << "wrote through a link to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot write '" + dangling + "': it is a symbolic link to a file that does not exist");
  }
  EXPECT_TRUE(std::filesystem::is_symlink(dangling));
  // Two links that name each other: the system's reason, not "does not exist".
  const std::string loop_a = dir.path + "/loop-a", loop_b = dir.path + "/loop-b";
  std::filesystem::create_symlink(loop_b, loop_a);
  std::filesystem::create_symlink(loop_a, loop_b);
  try {
    write_file_atomically(loop_a, "x");
    FAIL() << "wrote through a loop of links";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '" + loop_a + "': it is a symbolic link that cannot be followed: " +
                                         std::strerror(ELOOP));
  }
  std::vector<std::string> expected = {"dangling.json", "link.json", "loop-a", "loop-b", "pipe", "real.json"};
  EXPECT_EQ(dir.entries(), expected) << "a temporary file was left behind";
}

}  // namespace
}  // namespace glassbox
