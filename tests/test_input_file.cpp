// tests/test_input_file.cpp: opening and reading outside files
// (tensor/input_file.h): only a regular file is read, a named pipe is
// refused without blocking (by the library and by every reader that takes a
// path), a device without being read, and a file past its limit before
// anything is allocated for it.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <vector>

#include "data/idx_dataset.h"
#include "data/shared.h"
#include "data/text_corpus.h"
#include "tensor/input_file.h"
#include "tensor/safetensors.h"
#include "tests/support/data_files.h"
#include "tests/support/named_pipe.h"
#include "tests/support/sanitizers.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::message_of;
using testing::TempDir;
using testing::write_file;

std::string make_fifo(const TempDir& dir, const std::string& name) {
  const std::string path = dir / name;
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

// The message of the DataError `read` throws, run so that a reader that
// blocks on the named pipe `fifo` fails the test instead of hanging it.
std::string refusal_of(const std::string& fifo, const std::function<void()>& read) {
  return testing::without_blocking_on(fifo, [&] { return message_of<DataError>(read); });
}

TEST(InputFile, ReadsARegularFileWholeAndGivesItsSize) {
  TempDir dir;
  write_file(dir / "a", "seven b");
  std::string reason;
  const InputFile file = open_regular_file(dir / "a", reason);
  ASSERT_TRUE(file.is_open()) << reason;
  EXPECT_EQ(file.size(), 7u);
  EXPECT_EQ(read_regular_file(dir / "a", 7, "a test"), "seven b");  // exactly the limit
  write_file(dir / "empty", "");
  EXPECT_EQ(read_regular_file(dir / "empty", 0, "a test"), "");
  // A file whose size says 0 is read to its end all the same (/proc's files are such).
  EXPECT_TRUE(contains(read_regular_file("/proc/self/status", 1 << 20, "a test"), "Name:"));
  EXPECT_EQ(message_of<DataError>([&] { read_regular_file(dir / "missing", 10, "a test"); }),
            dir / "missing: cannot read: No such file or directory");
}

// Note [A limit is not a bad file]: out of descriptors, a good file is not
// "unreadable" (a reason, which the image loader takes as a bad image to
// skip for the rest of the run): the run fails with an Error that says so.
TEST(InputFile, RunningOutOfDescriptorsIsTheRunsErrorNotTheFiles) {
  if (testing::kUnderAddressSanitizer) {
    GTEST_SKIP() << "UBSan's type checks open a pipe the first time they meet a type, and there is no descriptor left";
  }
  TempDir dir;
  const std::string path = dir / "good";
  write_file(path, "fine");
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  std::vector<int> held;
  rlimit low = before;
  low.rlim_cur = std::min<rlim_t>(before.rlim_cur, 256);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held.push_back(fd);
  std::string reason, message;
  std::exception_ptr thrown;
  try {
    open_regular_file(path, reason);
  } catch (...) {
    thrown = std::current_exception();  // looked at below, with descriptors free again
  }
  for (int fd : held) ::close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  bool data_error = false;
  try {
    if (thrown) std::rethrow_exception(thrown);
  } catch (const DataError&) {
    data_error = true;
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_FALSE(data_error) << "a limit of the process is not a fault of the file";
  EXPECT_EQ(message, path + ": cannot open: Too many open files (a limit of this process or the system, not a fault "
                            "of the file; `ulimit -n` shows the process's descriptor limit)");
  EXPECT_TRUE(reason.empty()) << reason;
}

TEST(InputFile, ANamedPipeIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  EXPECT_EQ(refusal_of(fifo, [&] { read_regular_file(fifo, 1 << 20, "a test"); }),
            fifo + ": cannot read: Is a named pipe, not a regular file");
  EXPECT_EQ(refusal_of(fifo, [&] { open_regular_file(fifo); }),
            fifo + ": cannot read: Is a named pipe, not a regular file");
  std::string reason;
  EXPECT_FALSE(open_regular_file(fifo, reason).is_open());
  EXPECT_EQ(reason, "Is a named pipe, not a regular file");
}

TEST(InputFile, ADirectoryAndADeviceAreRefusedByWhatTheyAre) {
  TempDir dir;
  EXPECT_EQ(message_of<DataError>([&] { read_regular_file(dir.path(), 1 << 20, "a test"); }),
            dir.path() + ": cannot read: Is a directory");
  // /dev/zero never ends: read, it would run to the limit. It is not read at all.
  EXPECT_EQ(message_of<DataError>([&] { read_regular_file("/dev/zero", 1 << 20, "a test"); }),
            "/dev/zero: cannot read: Is a character device, not a regular file");
  std::string reason;
  EXPECT_FALSE(open_regular_file("/dev/null", reason).is_open());
  EXPECT_EQ(reason, "Is a character device, not a regular file");
}

TEST(InputFile, AFileOverTheLimitIsRefusedNamingItsSizeAndTheLimit) {
  TempDir dir;
  write_file(dir / "big", std::string(5000, 'x'));
  EXPECT_EQ(message_of<DataError>([&] { read_regular_file(dir / "big", 4096, "a test file (a reason)"); }),
            dir / "big: cannot read: it has 5,000 bytes, past the limit of 4,096 for a test file (a reason)");
  // data/shared.h's read_file says the same as a reason, for its callers to throw.
  std::string contents, reason;
  EXPECT_FALSE(read_file(dir / "big", contents, reason, 4999, "an image"));
  EXPECT_EQ(reason, "it has 5,000 bytes, past the limit of 4,999 for an image");
  EXPECT_TRUE(read_file(dir / "big", contents, reason, 5000, "an image"));
  EXPECT_EQ(contents.size(), 5000u);
}

TEST(InputFile, AFileThatGrowsPastTheLimitWhileReadIsRefused) {
  // /proc/self/status says it has 0 bytes and holds a kilobyte or so: as a
  // file that grows once its size has been checked.
  EXPECT_EQ(message_of<DataError>([] { read_regular_file("/proc/self/status", 100, "a test"); }),
            "/proc/self/status: cannot read: it grew while being read, past the limit of 100 for a test");
}

// Every reader of a path goes through open_regular_file: each refuses a
// named pipe at once, naming it (read_file for the IDX files, JPEGs and text).
TEST(InputFile, EveryReaderRefusesANamedPipeWithoutBlocking) {
  TempDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  for (const auto& read : {read_safetensors, read_safetensors_header}) {
    EXPECT_EQ(refusal_of(fifo, [&] { read(fifo); }), fifo + ": cannot read: Is a named pipe, not a regular file");
  }
  write_file(dir / "labels", testing::idx_labels({1, 2, 3}));
  EXPECT_EQ(refusal_of(fifo, [&] { IdxDataset({.name = "t", .images_path = fifo, .labels_path = dir / "labels"}); }),
            fifo + ": cannot read: Is a named pipe, not a regular file");
  EXPECT_EQ(refusal_of(fifo, [&] { TextCorpus({.path = fifo}); }),
            fifo + ": is neither a regular file nor a directory: a text corpus is a text file, or a directory of "
                   "them");
  std::string contents, reason;
  EXPECT_EQ(refusal_of(fifo, [&] {
              if (!read_file(fifo, contents, reason)) throw DataError(reason);
            }),
            "Is a named pipe, not a regular file");
}

}  // namespace
}  // namespace glassbox
