// tests/support/temp_dir.h: a fresh directory for one test, removed with
// everything in it when the test is done.
#pragma once

#include <string>

namespace glassbox::testing {

class TempDir {
 public:
  TempDir();  // under $TMPDIR (or /tmp); fails the test if it cannot be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return file(name); }

 private:
  std::string path_;
};

}  // namespace glassbox::testing
