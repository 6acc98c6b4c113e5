// tools/cli/data_parallel_args.cpp
#include "tools/cli/data_parallel_args.h"

#include "tensor/parse.h"

namespace glassbox::cli {

size_t bucket_bytes_arg(const Args& args) {
  const double mib = parse_number("--bucket-mb", args.get("--bucket-mb", "25"), 0.001, 1 << 20);
  return static_cast<size_t>(mib * (1 << 20));
}

DataParallelArgs data_parallel_args(const Args& args) {
  return {.sync = {.bucket_bytes = bucket_bytes_arg(args), .overlap = !args.has("--no-overlap")},
          .communicator = {.timeout_seconds =
                               parse_number("--comm-timeout", args.get("--comm-timeout", "300"), 0.001, 1e7)}};
}

std::vector<std::string> single_process_notes(const Args& args, int ranks) {
  std::vector<std::string> notes;
  if (ranks > 1) return notes;
  for (const char* flag : {"--bucket-mb", "--no-overlap", "--comm-timeout"}) {
    if (args.has(flag)) {
      notes.push_back(cat(flag, " applies under mpirun, to the all-reduce of the gradients; this run is one process, "
                                "which has none"));
    }
  }
  return notes;
}

ScaleJobArgs scale_job_args(const Args& args) {
  ScaleJobArgs job;
  for (const int64_t count : parse_growing_ints("--gpus", args.get("--gpus", "1,2,4,8,16,32,64"), 1, 1 << 20,
                                                 "device counts")) {
    job.device_counts.push_back(static_cast<int>(count));
  }
  job.link = link_model(args.get("--link", "nvlink"));
  if (args.has("--bandwidth-gbps")) {
    job.link.bandwidth_gbps = parse_number("--bandwidth-gbps", args.get("--bandwidth-gbps", ""), 1e-6, 1e6);
  }
  if (args.has("--latency-us")) job.link.latency_us = parse_number("--latency-us", args.get("--latency-us", ""), 0.0, 1e9);
  if (job.link.bandwidth_gbps <= 0.0) throw ConfigError("--link custom needs --bandwidth-gbps (and --latency-us)");
  // A custom link has no latency to default to: 0 would be a guess, and the
  // model's small buckets would look free.
  if (job.link.name == "custom" && !args.has("--latency-us")) {
    throw ConfigError("--link custom needs --latency-us (and --bandwidth-gbps)");
  }
  job.bucket_bytes = bucket_bytes_arg(args);
  return job;
}

}  // namespace glassbox::cli
