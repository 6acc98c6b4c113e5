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

}  // namespace glassbox::cli
