// tests/test_chrome_trace.cpp: the Chrome trace writer (graph/chrome_trace.h)
// and `glassbox trace`, run as a user runs it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/chrome_trace.h"
#include "tensor/error.h"
#include "tensor/kernel_names.h"
#include "tests/support/command.h"
#include "tests/support/temp_dir.h"
#include "tools/cli/trace_kernels.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::run_command;

ChromeTrace two_spans() {
  ChromeTrace trace;
  trace.process = "glassbox trace Tiny";
  trace.tracks = {{1, "host (layer spans)"}};
  trace.events = {{.name = "conv1 forward", .category = "forward", .start_us = 0.0, .duration_us = 12.5, .track = 1,
                   .text_args = {{"layer", "conv1"}}, .number_args = {{"flops", 2e6}}},
                  {.name = "relu1 \"forward\"", .category = "forward", .start_us = 12.5, .duration_us = 1.0, .track = 1}};
  trace.text_metadata = {{"network", "Tiny"}};
  trace.number_metadata = {{"batch", 8}};
  return trace;
}

TEST(ChromeTrace, WritesCompleteEventsOnNamedTracks) {
  const nlohmann::json doc = nlohmann::json::parse(to_chrome_json(two_spans()));
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  EXPECT_EQ(doc["otherData"]["network"], "Tiny");
  EXPECT_EQ(doc["otherData"]["batch"], 8);
  std::vector<nlohmann::json> complete, names;
  for (const auto& event : doc["traceEvents"]) {
    if (event["ph"] == "X") complete.push_back(event);
    if (event["ph"] == "M" && event["name"] != "thread_sort_index") names.push_back(event);
  }
  ASSERT_EQ(complete.size(), 2u);
  EXPECT_EQ(complete[0]["name"], "conv1 forward");
  EXPECT_EQ(complete[0]["ts"], 0.0);
  EXPECT_EQ(complete[0]["dur"], 12.5);
  EXPECT_EQ(complete[0]["tid"], 1);
  EXPECT_EQ(complete[0]["args"]["layer"], "conv1");
  EXPECT_EQ(complete[0]["args"]["flops"], 2e6);
  EXPECT_EQ(complete[1]["name"], "relu1 \"forward\"");  // escaped in the text, whole once parsed
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0]["args"]["name"], "glassbox trace Tiny");
  EXPECT_EQ(names[1]["args"]["name"], "host (layer spans)");
}

TEST(ChromeTrace, MalformedEventsAreNamed) {
  ChromeTrace negative = two_spans();
  negative.events[1].duration_us = -1.0;
  try {
    to_chrome_json(negative);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chrome trace: event 1 (relu1 \"forward\"): start 12.5 us and duration -1 us must be "
                           "finite and not negative");
  }
  ChromeTrace stray = two_spans();
  stray.events[0].track = 7;
  try {
    to_chrome_json(stray);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chrome trace: event 0 (conv1 forward): track 7 was not declared");
  }
}

// Kernels placed under their spans: the anchor is the first record of the
// earliest span with any, and a memset launched before every span moves all
// events later so that none starts before 0.
TEST(TraceKernels, RecordsGoOnAStreamTrackUnderTheirSpans) {
  ChromeTrace trace = two_spans();
  const std::vector<SpanTime> spans = {{.id = 0, .node = 1, .name = "conv1", .pass = Pass::kForward,
                                        .start_ms = 0.0, .duration_ms = 0.0125},
                                       {.id = 1, .node = 2, .name = "relu1", .pass = Pass::kForward,
                                        .start_ms = 0.0125, .duration_ms = 0.001}};
  std::vector<KernelRecord> records(3);
  records[0] = {.kind = KernelRecordKind::kMemset, .name = "memset", .start_ns = 998'000, .end_ns = 999'000,
                .stream = 7, .span = kNoSpan, .bytes = 4096};
  records[1] = {.kind = KernelRecordKind::kKernel, .name = "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(int)",
                .start_ns = 1'000'000, .end_ns = 1'010'000, .stream = 7, .span = 0};
  records[2] = {.kind = KernelRecordKind::kKernel, .name = "ampere_sgemm_128x64_nn", .start_ns = 1'012'000,
                .end_ns = 1'013'000, .stream = 9, .span = 1};
  cli::add_kernel_events(trace, spans, records, 2);
  ASSERT_EQ(trace.tracks.size(), 3u);
  EXPECT_EQ(trace.tracks[1].name, "stream 7 (kernels, copies, sets)");
  EXPECT_EQ(trace.tracks[2].name, "stream 9 (kernels, copies, sets)");
  ASSERT_EQ(trace.events.size(), 5u);
  // The memset began 2 us before the anchor (conv1's first kernel, at 0): all move 2 us later.
  EXPECT_DOUBLE_EQ(trace.events[0].start_us, 2.0);  // conv1 forward, a layer span
  EXPECT_DOUBLE_EQ(trace.events[2].start_us, 0.0);  // the memset
  EXPECT_DOUBLE_EQ(trace.events[3].start_us, 2.0);  // conv1's kernel, where conv1's span starts
  EXPECT_DOUBLE_EQ(trace.events[3].duration_us, 10.0);
  EXPECT_DOUBLE_EQ(trace.events[4].start_us, 14.0);
  EXPECT_EQ(trace.events[3].track, 2);
  EXPECT_EQ(trace.events[4].track, 3);
  EXPECT_EQ(trace.events[3].category, "kernel");
  EXPECT_EQ(trace.events[2].category, "memset");
  const auto args = [](const TraceEvent& e, const std::string& key) {
    for (const auto& [k, v] : e.text_args) {
      if (k == key) return v;
    }
    return std::string("(none)");
  };
  EXPECT_EQ(args(trace.events[3], "layer"), "conv1");
  EXPECT_EQ(args(trace.events[3], "pass"), "forward");
  EXPECT_EQ(args(trace.events[4], "layer"), "relu1");
  EXPECT_EQ(args(trace.events[2], "span"), "none: launched outside every span");
  EXPECT_TRUE(testing::contains(trace.events[3].name, "winogradForwardData4x4")) << trace.events[3].name;
  EXPECT_EQ(args(trace.events[3], "family"), std::string(name_of(kernel_family(records[1].name))));
  EXPECT_NO_THROW(to_chrome_json(trace));
}

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

TEST(CliTrace, WritesOneTrainStepOfLayerSpans) {
  const testing::TempDir dir;
  const std::string out = dir.path() + "/lenet.trace.json";
  const auto r = run_command(kCli + " trace LeNet --device cpu --batch 4 --warmup 1 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + out)) << r.output;
  // A cost inside the steps' own spread is said in words, never as a negative percentage.
  EXPECT_TRUE(contains(r.output, "recording's cost: within the noise (") || contains(r.output, "recording's cost: +") ||
              contains(r.output, "recording's cost: not measurable: the steps with spans ran faster"))
      << r.output;
  // One step of each has no spread to compare a difference with.
  const auto one =
      run_command(kCli + " trace LeNet --device cpu --batch 4 --warmup 0 --steps 1 --layout nchw --out " + out);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_TRUE(contains(one.output, "recording's cost: not measured with one step of each (")) << one.output;
  std::ifstream file(out);
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str());
  EXPECT_EQ(doc["otherData"]["kind"], "glassbox.trace");
  EXPECT_EQ(doc["otherData"]["network"], "LeNet");
  EXPECT_EQ(doc["otherData"]["batch"], 4);
  EXPECT_EQ(doc["otherData"]["layout"], "NCHW");
  std::vector<std::string> spans;
  double step_us = 0.0;
  for (const auto& event : doc["traceEvents"]) {
    if (event["ph"] != "X") continue;
    if (event["name"] == "train step") {
      step_us = event["dur"];
      continue;
    }
    spans.push_back(event["name"]);
    EXPECT_LE(event["ts"].get<double>() + event["dur"].get<double>(), step_us + 1e-6) << event["name"];
  }
  // 13 layers forward, 13 backward with fc3, fc4, fc5 and conv2 split in two
  // (conv1's input is the data: weights only), and the update.
  EXPECT_EQ(spans.size(), 13u + 13u + 4u + 1u);
  EXPECT_EQ(spans.front(), "conv1 forward");
  EXPECT_EQ(spans[spans.size() - 2], "conv1 backward-weights");
  EXPECT_EQ(spans.back(), "sgd optimizer");
}

// With NHWC values, the trace says so, and each layer's span gives its layout.
TEST(CliTrace, ATraceOfNhwcValuesGivesEachLayersLayout) {
  const testing::TempDir dir;
  const std::string out = dir.path() + "/nhwc.json";
  const auto r =
      run_command(kCli + " trace LeNet --device cpu --batch 4 --warmup 0 --steps 1 --layout nhwc --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream file(out);
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str());
  if (!GLASSBOX_WITH_ONEDNN) {  // the CPU's convolutions read and write NHWC through oneDNN only
    EXPECT_EQ(doc["otherData"]["layout"], "NCHW");
    for (const auto& event : doc["traceEvents"]) {
      EXPECT_FALSE(event.contains("args") && event["args"].contains("layout")) << event;
    }
    GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW, and the trace says so";
  }
  EXPECT_EQ(doc["otherData"]["layout"], "NHWC where the layers take it (each span's \"layout\")");
  int with_layout = 0;
  for (const auto& event : doc["traceEvents"]) {
    if (event["ph"] != "X" || !event["args"].contains("type")) continue;
    // A layer whose output is an image says its layout; the others (the fully connected ones) have none.
    const std::string name = event["name"];
    if (name.starts_with("conv") || name.starts_with("pool")) {
      EXPECT_TRUE(event["args"].contains("layout")) << event;
    }
    if (name.starts_with("fc")) {
      EXPECT_FALSE(event["args"].contains("layout")) << event;
    }
    if (!event["args"].contains("layout")) continue;
    EXPECT_FALSE(event["args"]["layout"].get<std::string>().empty()) << event;
    with_layout += event["args"]["layout"].get<std::string>().starts_with("NHWC") ? 1 : 0;
  }
  EXPECT_GT(with_layout, 0);
}

TEST(CliTrace, AnUnwritableOutputFailsBeforeTheRun) {
  const auto r = run_command(kCli + " trace LeNet --device cpu --out /nonexistent-dir/x.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "/nonexistent-dir/x.json")) << r.output;
  EXPECT_FALSE(contains(r.output, "traced train step")) << r.output;
}

}  // namespace
}  // namespace glassbox
