// tensor/host_memory.cpp: /proc/meminfo and the cgroup files, read as text.
#include "tensor/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

namespace glassbox {
namespace {

// The first number in a file ("max" and missing files give nothing).
bool read_number(const char* path, int64_t& value) {
  std::ifstream file(path);
  std::string word;
  if (!(file >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos) return false;
  std::istringstream(word) >> value;
  return true;
}

// MemAvailable, in bytes (the file gives kB).
bool read_mem_available(int64_t& bytes) {
  std::ifstream file("/proc/meminfo");
  std::string key, unit;
  int64_t kib = 0;
  while (file >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      bytes = kib * 1024;
      return true;
    }
  }
  return false;
}

// Room left under this process's cgroup limit, if it has one.
bool read_cgroup_room(int64_t& bytes, std::string& source) {
  // cgroup v2: the process's group is at the root of the namespace's mount.
  int64_t limit = 0, used = 0;
  if (read_number("/sys/fs/cgroup/memory.max", limit) && read_number("/sys/fs/cgroup/memory.current", used)) {
    bytes = std::max<int64_t>(0, limit - used);
    source = "cgroup memory.max";
    return true;
  }
  // cgroup v1: "no limit" is a huge number, which the min() below ignores.
  if (read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", limit) &&
      read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", used)) {
    bytes = std::max<int64_t>(0, limit - used);
    source = "cgroup memory.limit_in_bytes";
    return true;
  }
  return false;
}

// Room left under this process's address-space limit (`ulimit -v`), if it
// has one: the limit less what the process maps already (/proc/self/statm's
// first field, in pages).
bool read_address_space_room(int64_t& bytes) {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return false;
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  if (!(statm >> pages)) return false;
  const auto cap = static_cast<int64_t>(std::min<rlim_t>(limit.rlim_cur, std::numeric_limits<int64_t>::max()));
  bytes = std::max<int64_t>(0, cap - pages * sysconf(_SC_PAGESIZE));
  return true;
}

}  // namespace

AvailableMemory host_available_memory() {
  AvailableMemory available;
  int64_t bytes = 0;
  if (read_mem_available(bytes)) available = {bytes, "MemAvailable"};
  std::string source;
  if (read_cgroup_room(bytes, source) && bytes < available.bytes) available = {bytes, source};
  if (read_address_space_room(bytes) && bytes < available.bytes) {
    available = {bytes, "the address-space limit, ulimit -v"};
  }
  return available;
}

}  // namespace glassbox
