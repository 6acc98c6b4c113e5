// tensor/host_memory.h: how much memory the host can still give this process.
// Linux overcommits: a large malloc succeeds and the process is killed later,
// mid-step, when the pages are first written. So Glassbox asks the kernel
// first: MemAvailable in /proc/meminfo (free memory plus what the page cache
// can give back), capped by the cgroup limit a container or job scheduler
// sets (cgroup v2 memory.max, v1 memory.limit_in_bytes, less what the group
// already uses) and by the process's address-space limit (`ulimit -v`, less
// what it maps already).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace glassbox {

struct AvailableMemory {
  int64_t bytes = std::numeric_limits<int64_t>::max();  // max(): unknown, no check possible
  // Where the figure comes from: "MemAvailable", "cgroup memory.max", "the address-space limit, ulimit -v".
  std::string source;
};

AvailableMemory host_available_memory();

}  // namespace glassbox
