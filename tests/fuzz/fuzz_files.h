// tests/fuzz/fuzz_files.h: the folder and files of the targets whose input
// becomes files on disk (fuzz_checkpoint_dir, fuzz_image_folder).
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace glassbox::fuzz {

// A directory of its own under $TMPDIR (or /tmp), named glassbox-fuzz-<what>.XXXXXX,
// removed at exit.
class TempDir {
 public:
  explicit TempDir(std::string_view what) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/glassbox-fuzz-" + std::string(what) + ".XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

// `bytes` as the whole of the file `path`; a write that fails aborts (the
// harness, not the code under test, failed).
inline void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

}  // namespace glassbox::fuzz
