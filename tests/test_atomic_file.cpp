// tests/test_atomic_file.cpp: a file is written whole or not at all, and a
// failure names the path, the step that failed and the system's reason
// (tensor/atomic_file.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
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

// The last step, the rename, fails when the path is a directory: the error
// names the step, the directory is left as it was and the temporary file goes.
TEST(AtomicFile, AFailedStepIsNamedAndLeavesNothingBehind) {
  TemporaryDirectory dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string path = dir.path + "/results";
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  try {
    write_file_atomically(path, "{}\n");
    FAIL() << "wrote a file over a directory";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "writing '" + path + "' failed (rename): Is a directory");
  }
  EXPECT_TRUE(std::filesystem::is_directory(path));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"results"}) << "a temporary file was left behind";
}

}  // namespace
}  // namespace glassbox
