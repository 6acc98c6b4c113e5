// tools/cli/data_parallel_args.h: the data-parallel flags of `time` and
// `train` (with_data_parallel_flags in flag_specs.h), parsed once.
#pragma once

#include "optim/communicator.h"
#include "optim/gradient_sync.h"
#include "tools/cli/args.h"

namespace glassbox::cli {

struct DataParallelArgs {
  GradientSyncOptions sync;          // --bucket-mb, --no-overlap
  CommunicatorOptions communicator;  // --comm-timeout
};
DataParallelArgs data_parallel_args(const Args& args);

// --bucket-mb in bytes (default 25 MiB); `scale` reads it too.
size_t bucket_bytes_arg(const Args& args);

}  // namespace glassbox::cli
