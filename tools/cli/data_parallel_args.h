// tools/cli/data_parallel_args.h: the data-parallel flags of `time` and
// `train` (with_data_parallel_flags in flag_specs.h), and those of `scale`
// that describe the job it predicts, parsed once (tests/fuzz/fuzz_cli.cpp too).
#pragma once

#include <string>
#include <vector>

#include "optim/communicator.h"
#include "optim/gradient_sync.h"
#include "optim/scale_model.h"
#include "tools/cli/args.h"

namespace glassbox::cli {

struct DataParallelArgs {
  GradientSyncOptions sync;          // --bucket-mb, --no-overlap
  CommunicatorOptions communicator;  // --comm-timeout
};
DataParallelArgs data_parallel_args(const Args& args);
// A note for each of those flags given to a run of one process, which has no
// gradients to all-reduce: they are checked, and do nothing there.
std::vector<std::string> single_process_notes(const Args& args, int ranks);

// --bucket-mb in bytes (default 25 MiB); `scale` reads it too.
size_t bucket_bytes_arg(const Args& args);

// `scale`: --gpus (device counts, each from 1 to 2^20), --link with
// --bandwidth-gbps and --latency-us, --bucket-mb.
struct ScaleJobArgs {
  std::vector<int> device_counts;
  LinkModel link;
  size_t bucket_bytes = 0;
};
ScaleJobArgs scale_job_args(const Args& args);

}  // namespace glassbox::cli
