// tools/cli/report.cpp: `glassbox report FILE.json [--out FILE.html]`: an HTML
// page with charts (tools/cli/report_html.h) from what `glassbox time --json`,
// `glassbox sweep` or `glassbox trace` wrote. The page is written whole or
// not at all (tensor/atomic_file.h); by default beside the input, FILE.html.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tensor/atomic_file.h"
#include "tensor/error.h"
#include "tensor/input_file.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/report_html.h"

namespace glassbox::cli {
namespace {

// The most bytes report reads: 1 GiB, far above what glassbox time, sweep and
// trace write (kilobytes to a few megabytes); the page is made in memory whole.
constexpr uint64_t kMaxReportInputBytes = uint64_t{1} << 30;

std::string read_whole(const std::string& path) {
  std::string contents, reason;
  if (!read_regular_file(path, kMaxReportInputBytes, "a report's input (it is parsed in memory whole)", contents,
                         reason)) {
    throw Error(cat(path, ": cannot read: ", reason));
  }
  return contents;
}

// FILE.json -> FILE.html; any other name gets .html added.
std::string default_out(const std::string& in) {
  const std::string json = ".json";
  if (in.size() > json.size() && in.ends_with(json)) return in.substr(0, in.size() - json.size()) + ".html";
  return in + ".html";
}

}  // namespace

int run_report(const std::vector<std::string>& words) {
  const Args args("report", report_flags(), words);
  if (args.positionals().size() != 1) {
    throw ConfigError(cat("report takes one JSON file (got ", args.positionals().size(),
                          "): what glassbox time --json, glassbox sweep or glassbox trace wrote"));
  }
  const std::string& in = args.positionals()[0];
  // The default page goes beside its input; a stream (/dev/stdin,
  // /proc/self/fd/0) has no folder for it, and the page would land in /dev
  // (/dev/shm is a folder of files).
  std::error_code error;
  const std::string where = std::filesystem::absolute(in, error).lexically_normal().string();
  const bool stream = (where.starts_with("/dev/") && !where.starts_with("/dev/shm/")) || where.starts_with("/proc/");
  if (!args.has("--out") && !error && stream) {
    throw ConfigError(cat("report ", in, ": an input read from /dev or /proc has no folder for the page beside it: "
                          "give --out FILE"));
  }
  const std::string out = args.get("--out", default_out(in));
  if (same_file(out, in)) {
    throw ConfigError(cat("report --out ", out, " is also the input file: the page would replace the data it is made "
                          "from; give another path"));
  }
  check_writable(out);  // before the work, and a pipe or a device is refused (tensor/atomic_file.h)
  const ReportPage page = report_html(read_report_data(read_whole(in), in), in);
  write_file_atomically(out, page.html);
  std::printf("wrote %s (%d chart%s)\n", out.c_str(), page.charts, page.charts == 1 ? "" : "s");
  return 0;
}

}  // namespace glassbox::cli
