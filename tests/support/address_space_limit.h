// tests/support/address_space_limit.h: this process's address space held to
// what it maps now plus `room` bytes (RLIMIT_AS, as `ulimit -v` sets it),
// for as long as the object lives, so that the next large allocation fails.
// Not under AddressSanitizer, which maps terabytes of shadow memory and
// aborts where an allocation fails: a test checks kUnderAddressSanitizer
// (tests/support/sanitizers.h) and skips first.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace glassbox::testing {

class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(int64_t room) {
    held_ = getrlimit(RLIMIT_AS, &before_) == 0;
    std::ifstream statm("/proc/self/statm");
    int64_t pages = 0;
    held_ = held_ && static_cast<bool>(statm >> pages);
    rlimit low = before_;
    low.rlim_cur = static_cast<rlim_t>(pages * sysconf(_SC_PAGESIZE) + room);
    held_ = held_ && setrlimit(RLIMIT_AS, &low) == 0;
  }
  ~AddressSpaceLimit() {
    if (held_) setrlimit(RLIMIT_AS, &before_);
  }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;
  bool held() const { return held_; }

 private:
  rlimit before_{};
  bool held_ = false;
};

}  // namespace glassbox::testing
