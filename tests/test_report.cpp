// tests/test_report.cpp: `glassbox report`: the page from each kind of file
// (tests/data/report/: a time, a sweep and a trace of LeNet) is one
// well-formed document with one <svg> per chart and one point per measured
// thing; text is escaped; bad files are errors naming the file and the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/error.h"
#include "tests/support/command.h"
#include "tests/support/data_files.h"
#include "tests/support/named_pipe.h"
#include "tests/support/temp_dir.h"
#include "tools/cli/report_data.h"
#include "tools/cli/report_html.h"
#include "tools/cli/svg_chart.h"

namespace {

using glassbox::cat;
using glassbox::DataError;
using glassbox::cli::read_report_data;
using glassbox::cli::report_html;
using glassbox::cli::ReportPage;
using glassbox::testing::contains;
using glassbox::testing::TempDir;
using Json = nlohmann::json;

const std::string kData = GLASSBOX_TEST_DATA_DIR "/report/";
const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream s;
  s << file.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// The page's elements nest properly with one root, <html>: every tag closed
// or self-closed, in order (the page is written as XHTML-style markup, so
// this holds for every element, void ones included). Returns "" or the problem.
std::string nesting_problem(const std::string& html) {
  std::vector<std::string> open;
  int roots = 0;
  for (size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at + 1)) {
    const size_t end = html.find('>', at);
    if (end == std::string::npos) return "a tag that never ends at " + std::to_string(at);
    const std::string tag = html.substr(at + 1, end - at - 1);
    if (tag.starts_with("!")) continue;  // <!DOCTYPE html>
    const bool closing = tag.starts_with("/"), self_closed = tag.ends_with("/");
    const size_t name_start = closing ? 1 : 0;
    const std::string name = tag.substr(name_start, tag.find_first_of(" /", name_start) - name_start);
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
    } else if (!self_closed) {
      if (open.empty()) ++roots;
      open.push_back(name);
    }
    at = end;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return roots == 1 ? "" : std::to_string(roots) + " root elements";
}

// The <svg> elements of the page, in order.
std::vector<std::string> svgs(const std::string& html) {
  std::vector<std::string> out;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    out.push_back(html.substr(at, html.find("</svg>", at) - at));
  }
  return out;
}

ReportPage page_of(const std::string& file) { return report_html(read_report_data(read_text(file), file), file); }

// (layer, pass) entries with FLOPs in a time object: the roofline's points.
int passes_with_flops(const Json& time) {
  int n = 0;
  for (const Json& layer : time["layers"]) {
    for (const Json& pass : layer["passes"]) n += pass.value("flops", 0.0) > 0 ? 1 : 0;
  }
  return n;
}

int passes_with_time(const Json& time) {
  int n = 0;
  for (const Json& layer : time["layers"]) {
    for (const Json& pass : layer["passes"]) n += pass["ms"].get<double>() > 0 ? 1 : 0;
  }
  return n;
}

TEST(Report, ATimeFileGivesOneDocumentWithLayerBarsAndARoofline) {
  const Json time = Json::parse(read_text(kData + "time.json"));
  const ReportPage page = page_of(kData + "time.json");
  EXPECT_EQ(nesting_problem(page.html), "");
  EXPECT_TRUE(page.html.starts_with("<!DOCTYPE html>"));
  EXPECT_FALSE(contains(page.html, "<script")) << "the page needs no script";
  const std::vector<std::string> charts = svgs(page.html);
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(page.charts, 2);
  // The bars: a segment per (layer, pass) with time, the layers in graph order.
  EXPECT_EQ(count(charts[0], "<rect class=\"bar\""), passes_with_time(time));
  size_t last = 0;
  for (const Json& layer : time["layers"]) {
    const std::string label = cat(">", layer["name"].get<std::string>(), "<title>");
    const size_t at = charts[0].find(label);
    ASSERT_NE(at, std::string::npos) << layer["name"];
    EXPECT_GT(at, last) << layer["name"] << " is out of graph order";
    last = at;
  }
  EXPECT_TRUE(contains(charts[0], "time (ms)"));
  EXPECT_TRUE(contains(charts[0], "<title>conv1 forward: 0.410 ms</title>"));
  // The roofline: one point per (layer, pass) with FLOPs, the roof, labelled axes.
  EXPECT_EQ(count(charts[1], "<circle"), passes_with_flops(time));
  EXPECT_GT(passes_with_flops(time), 5);
  EXPECT_EQ(count(charts[1], "<polyline"), 1);
  EXPECT_TRUE(contains(charts[1], "arithmetic intensity (FLOP/byte, log scale)"));
  EXPECT_TRUE(contains(charts[1], "achieved FLOP/s (log scale)"));
  EXPECT_TRUE(contains(charts[1], "peak 310 GFLOP/s"));
  EXPECT_TRUE(contains(charts[1], "<title>conv2 backward-weights: "));
  // The run: network, device, batch, the runtime's keys and values.
  for (const char* expected : {"LeNet", "AMD EPYC 7B13", "batch 64", "openmp threads", "0.9.0 (6c8986a)"}) {
    EXPECT_TRUE(contains(page.html, expected)) << expected;
  }
}

TEST(Report, ASweepPlotsOnePointPerBatchThatFittedAndMarksTheFailedOnes) {
  const Json sweep = Json::parse(read_text(kData + "sweep.json"));
  int fitted = 0, failed = 0;
  for (const Json& point : sweep["points"]) (point.contains("error") ? failed : fitted) += 1;
  ASSERT_GT(fitted, 3);
  ASSERT_EQ(failed, 1);
  const ReportPage page = page_of(kData + "sweep.json");
  EXPECT_EQ(nesting_problem(page.html), "");
  const std::vector<std::string> charts = svgs(page.html);
  ASSERT_EQ(charts.size(), 4u);  // throughput, memory, and the largest batch's bars and roofline
  EXPECT_EQ(page.charts, 4);
  for (int i : {0, 1}) {
    EXPECT_EQ(count(charts[i], "<circle"), fitted) << "chart " << i;
    EXPECT_EQ(count(charts[i], "<path class=\"failed\""), failed) << "chart " << i;
    EXPECT_TRUE(contains(charts[i], "batch size (images, log2 scale)"));
    EXPECT_TRUE(contains(charts[i], "<title>batch 512: out of memory: cpu: 512 MiB limit"));
  }
  EXPECT_TRUE(contains(charts[0], "throughput (images/s)"));
  // Memory from under 1 MiB to 30 MiB spans decades: a log axis.
  EXPECT_TRUE(contains(charts[1], "peak memory (MiB, log scale)"));
  EXPECT_EQ(count(charts[3], "<circle"), passes_with_flops(sweep["largest"]));
  EXPECT_TRUE(contains(page.html, "The largest batch that fitted: 256"));
}

TEST(Report, ATraceSumsLayerSpansPerStepAndLeavesKernelsOut) {
  const ReportPage page = page_of(kData + "trace.json");
  EXPECT_EQ(nesting_problem(page.html), "");
  const std::vector<std::string> charts = svgs(page.html);
  ASSERT_EQ(charts.size(), 2u);
  // Two steps of conv1 forward at 0.41 ms each: 0.41 ms per step; the
  // kernels inside the spans (cat "kernel", with args.layer too) do not add.
  EXPECT_TRUE(contains(charts[0], "<title>conv1 forward: 0.410 ms</title>"));
  EXPECT_TRUE(contains(page.html, "62 over 2 steps"));
  EXPECT_TRUE(contains(page.html, "12 events"));

  // A GPU trace's copies name their span too (tools/cli/trace_kernels.cpp): not a layer's time either.
  Json with_copy = Json::parse(read_text(kData + "trace.json"));
  with_copy["traceEvents"].push_back({{"name", "HtoD"},
                                      {"cat", "memcpy"},
                                      {"ph", "X"},
                                      {"ts", 1.0},
                                      {"dur", 5000.0},
                                      {"args", {{"layer", "conv1"}, {"pass", "forward"}, {"bytes", 1e6}}}});
  const std::string copy_html = report_html(read_report_data(with_copy.dump(), "t.json"), "t.json").html;
  EXPECT_TRUE(contains(copy_html, "<title>conv1 forward: 0.410 ms</title>"));
  EXPECT_TRUE(contains(copy_html, "1 event, 2.500 ms per step"));

  // Without FLOPs and bytes in the spans, no roofline.
  Json trace = Json::parse(read_text(kData + "trace.json"));
  for (Json& event : trace["traceEvents"]) {
    if (event.contains("args")) event["args"].erase("bytes");
  }
  const ReportPage without = report_html(read_report_data(trace.dump(), "t.json"), "t.json");
  EXPECT_EQ(svgs(without.html).size(), 1u);
}

// `time --inference` writes "phase": "inference": its step is an inference step.
TEST(Report, AnInferenceTimeFileNamesItsStepSo) {
  Json time = Json::parse(read_text(kData + "time.json"));
  EXPECT_TRUE(contains(report_html(read_report_data(time.dump(), "t.json"), "t.json").html, "training step"));
  time["phase"] = "inference";
  const std::string html = report_html(read_report_data(time.dump(), "t.json"), "t.json").html;
  EXPECT_TRUE(contains(html, "inference step"));
  EXPECT_FALSE(contains(html, "training step"));
}

TEST(Report, TextFromTheFileIsEscaped) {
  Json time = Json::parse(read_text(kData + "time.json"));
  time["layers"][0]["name"] = "<a&b>";
  time["network"] = "Le\"Net'";
  time["runtime"]["x<y"] = "</table>";
  const std::string html = report_html(read_report_data(time.dump(), "t.json"), "t&t.json").html;
  EXPECT_EQ(nesting_problem(html), "");
  EXPECT_FALSE(contains(html, "<a&b>"));
  EXPECT_TRUE(contains(html, "&lt;a&amp;b&gt;"));
  EXPECT_TRUE(contains(html, "Le&quot;Net&#39;"));
  EXPECT_TRUE(contains(html, "x&lt;y"));
  EXPECT_TRUE(contains(html, "&lt;/table&gt;"));
  EXPECT_TRUE(contains(html, "t&amp;t.json"));
  EXPECT_EQ(glassbox::cli::svg::escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(Report, BadFilesNameTheFileAndTheProblem) {
  Json time = Json::parse(read_text(kData + "time.json"));
  Json no_layers = time;
  no_layers.erase("layers");
  Json bad_ms = time;
  bad_ms["layers"][1]["passes"][0]["ms"] = "fast";
  Json sweep = Json::parse(read_text(kData + "sweep.json"));
  sweep["points"][2].erase("step_ms");
  const Json trace = {
      {"traceEvents", {{{"ph", "X"}, {"cat", "forward"}, {"ts", 1.0}, {"args", {{"layer", "conv1"}}}}}}};
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {"<html>",
       "f.json: not JSON: parse error at line 1, column 1: syntax error while parsing value - invalid literal; "
       "last read: '<'"},
      {"", "f.json: not JSON: parse error at line 1, column 1"},
      {"{\"kind\": 1E60000}", "f.json: not JSON: number overflow parsing '1E60000'"},
      {"[1, 2]",
       "f.json: not a Glassbox report file: the top level is a JSON array, not an object; known kinds: "
       "glassbox.time, glassbox.sweep, glassbox.trace"},
      {"{\"network\": \"LeNet\"}",
       "f.json: not a Glassbox report file: no \"kind\" field and no \"traceEvents\"; "
       "known kinds: glassbox.time, glassbox.sweep, glassbox.trace"},
      {"{\"kind\": \"glassbox.tiem\"}",
       "f.json: unknown kind \"glassbox.tiem\"; known kinds: glassbox.time, glassbox.sweep, glassbox.trace"},
      {"{\"kind\": 3}", "f.json: field kind must be a string, got number 3"},
      {no_layers.dump(), "f.json: field layers is missing"},
      {bad_ms.dump(), "f.json: field layers[1].passes[0].ms must be a number, got string \"fast\""},
      {sweep.dump(), "f.json: field points[2].step_ms is missing"},
      {trace.dump(), "f.json: field traceEvents[0].dur is missing"},
      {"{\"kind\": \"glassbox.sweep\", \"network\": \"x\", \"points\": [{\"batch\": 1.5}]}",
       "f.json: field points[0].batch must be an integer, got number 1.5"},
      {"{\"kind\": \"glassbox.sweep\", \"network\": \"x\", \"item\": \"frames\", \"points\": []}",
       "f.json: field item is 'frames', not images or tokens"},
      {"{\"kind\": \"glassbox.sweep\", \"network\": \"x\", \"points\": [{\"batch\": 18446744073709551615}]}",
       "f.json: field points[0].batch must be an integer, got number 18446744073709551615"},
      {"{\"kind\": \"glassbox.sweep\", \"network\": \"x\", \"points\": []}",
       "f.json: field points is empty: a sweep file has an entry for each batch it ran"},
      {"{\"kind\": \"glassbox.time\", \"network\": \"x\", \"layers\": []}",
       "f.json: field layers is empty: a time file has an entry for each layer it timed"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"ts\": 1, \"dur\": 2}]}",
       "f.json: no layer spans (\"X\" events with args.layer): not a trace of glassbox trace, or one of no step"},
      {"{\"kind\": \"glassbox.sweep\", \"network\": \"x\", \"item\": \"tokens\", \"points\": "
       "[{\"batch\": 1, \"step_ms\": 2, \"images_per_s\": 500, \"peak_bytes\": 1}]}",
       "f.json: field points[0].tokens_per_s is missing"},
  };
  for (const auto& c : cases) {
    try {
      read_report_data(c.text, "f.json");
      ADD_FAILURE() << "no error for " << c.text.substr(0, 80);
    } catch (const DataError& e) {
      EXPECT_TRUE(contains(e.what(), c.message)) << e.what() << "\nexpected: " << c.message;
    }
  }
}

// What the file holds is quoted in a message as an excerpt (tensor/error.h):
// escaped and cut, whether nlohmann quotes it or the reader does.
TEST(Report, WhatAFileHoldsIsQuotedEscapedAndCut) {
  auto problem = [](const std::string& text) {
    try {
      read_report_data(text, "f.json");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // nlohmann quotes the token it stopped in: here an unclosed string of 100,000 bytes, and bad UTF-8.
  EXPECT_EQ(problem("{\"kind\": \"" + std::string(100000, 'v')),
            "f.json: not JSON: parse error at line 1, column 100011: syntax error while parsing value - invalid "
            "string: missing closing quote; last read: '\"" + std::string(39, 'v') + "... (100,001 bytes)'");
  EXPECT_EQ(problem("{\"kind\": \"a\xff\"}"),
            "f.json: not JSON: parse error at line 1, column 12: syntax error while parsing value - invalid string: "
            "ill-formed UTF-8 byte; last read: '\"a\\xff'");
  EXPECT_EQ(problem("{\"kind\": \"glassbox.\\u001b[2J\xc3\xa9\"}"),
            "f.json: unknown kind \"glassbox.\\x1b[2J\\xc3\\xa9\"; known kinds: glassbox.time, glassbox.sweep, "
            "glassbox.trace");
  Json time = Json::parse(read_text(kData + "time.json"));
  time["layers"][1]["passes"][0]["ms"] = std::string(1000, 'f');
  EXPECT_EQ(problem(time.dump()), "f.json: field layers[1].passes[0].ms must be a number, got string \"" +
                                      std::string(39, 'f') + "... (1,002 bytes)");
}

// What `glassbox time --json`, `glassbox trace` and `glassbox sweep` write, end to end: the trace's
// numeric otherData are doubles (batch 4.0) and its runtime is "runtime.KEY";
// a sweep's "largest" may be null.
TEST(Report, WhatTraceAndSweepWriteMakesAPage) {
  TempDir dir;
  auto r = glassbox::testing::run_command(kCli + " time LeNet --device cpu --batch 4 --warmup 1 --steps 1 --json " +
                                          (dir / "time.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = glassbox::testing::run_command(kCli + " report " + (dir / "time.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string time_html = read_text(dir / "time.html");
  EXPECT_EQ(nesting_problem(time_html), "");
  const std::vector<std::string> time_charts = svgs(time_html);
  ASSERT_EQ(time_charts.size(), 2u);
  EXPECT_EQ(count(time_charts[1], "<circle"), passes_with_flops(Json::parse(read_text(dir / "time.json"))));
  EXPECT_TRUE(contains(time_html, "memory: optimizer state"));

  r = glassbox::testing::run_command(kCli + " trace LeNet --device cpu --batch 4 --warmup 1 --steps 1 --out " +
                                     (dir / "t.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A ReLU that conv1 applies moves nothing of its own, in the trace as in `time`.
  int relu1_forwards = 0;
  const Json written = Json::parse(read_text(dir / "t.json"));
  for (const Json& event : written.at("traceEvents")) {
    if (event.value("name", "") != "relu1 forward") continue;
    ++relu1_forwards;
    EXPECT_EQ(event.at("args").at("bytes").get<double>(), 0.0) << event.dump();
  }
  EXPECT_EQ(relu1_forwards, 1);
  r = glassbox::testing::run_command(kCli + " report " + (dir / "t.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string html = read_text(dir / "t.html");
  EXPECT_EQ(nesting_problem(html), "");
  EXPECT_TRUE(contains(html, "LeNet: trace summary"));
  EXPECT_TRUE(contains(html, "batch 4,"));
  EXPECT_TRUE(contains(html, "<h2>Runtime</h2>"));
  EXPECT_TRUE(contains(html, "<title>conv1 forward: "));
  EXPECT_GE(svgs(html).size(), 1u);

  r = glassbox::testing::run_command(kCli + " sweep LeNet --device cpu --batches 1,2 --warmup 0 --steps 1 --out " +
                                     (dir / "s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = glassbox::testing::run_command(kCli + " report " + (dir / "s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  html = read_text(dir / "s.html");
  EXPECT_EQ(nesting_problem(html), "");
  const std::vector<std::string> charts = svgs(html);
  ASSERT_GE(charts.size(), 2u);
  EXPECT_EQ(count(charts[0], "<circle"), 2);
  EXPECT_EQ(count(charts[1], "<circle"), 2);
}

TEST(Report, TheCommandWritesThePageBesideTheInputOrToOut) {
  TempDir dir;
  std::filesystem::copy_file(kData + "time.json", dir / "run.json");
  auto r = glassbox::testing::run_command(kCli + " report " + (dir / "run.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + (dir / "run.html") + " (2 charts)")) << r.output;
  EXPECT_EQ(read_text(dir / "run.html"), page_of(dir / "run.json").html);

  r = glassbox::testing::run_command(kCli + " report " + kData + "sweep.json --out '" + (dir / "sweep page.htm") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "(4 charts)"));
  EXPECT_TRUE(std::filesystem::exists(dir / "sweep page.htm"));
}

TEST(Report, CommandErrorsNameTheFileAndExitOneOrTwo) {
  TempDir dir;
  write_text(dir / "bad.json", "{\"kind\": \"glassbox.time\", \"network\": \"LeNet\"}");
  write_text(dir / "old.html", "kept");
  std::filesystem::copy_file(kData + "time.json", dir / "run.json");
  std::filesystem::create_symlink(dir / "run.json", dir / "link.html");
  const struct {
    std::string args;
    int exit_code;
    std::string message;
  } cases[] = {
      {"report", 2,
       "glassbox: report takes one JSON file (got 0): what glassbox time --json, glassbox sweep or "
       "glassbox trace wrote"},
      {"report a.json b.json", 2, "glassbox: report takes one JSON file (got 2)"},
      {"report /dev/stdin", 2,
       "glassbox: report /dev/stdin: an input read from /dev or /proc has no folder for the page beside it: give "
       "--out FILE"},
      {"report " + kData + "time.json --out", 2, "glassbox: --out needs a value (--out FILE)"},
      {"report " + (dir / "none.json"), 1,
       "glassbox: " + (dir / "none.json") + ": cannot read: No such file or directory"},
      {"report " + dir.path(), 1, "glassbox: " + dir.path() + ": cannot read: Is a directory"},
      {"report " + (dir / "bad.json") + " --out " + (dir / "old.html"), 1,
       "glassbox: " + (dir / "bad.json") + ": field layers is missing"},
      {"report " + kData + "time.json --out " + (dir / "no/such/dir.html"), 1, dir / "no/such/dir.html"},
      {"report " + (dir / "run.json") + " --out " + (dir / "run.json"), 2,
       "glassbox: report --out " + (dir / "run.json") + " is also the input file: the page would replace the data it "
                                                         "is made from; give another path"},
      {"report " + (dir / "run.json") + " --out " + (dir / "link.html"), 2, "is also the input file"},
  };
  for (const auto& c : cases) {
    const auto r = glassbox::testing::run_command(kCli + " " + c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "glassbox " << c.args << " printed:\n" << r.output;
  }
  EXPECT_EQ(read_text(dir / "old.html"), "kept") << "a failed report leaves the old page alone";
  EXPECT_EQ(read_text(dir / "run.json"), read_text(kData + "time.json")) << "the input is left alone";
}

// Times whose bars sum past the largest double cannot be drawn: the page is
// refused, where it would have held NaN coordinates.
TEST(Report, TimesTooLargeToDrawAreRefusedNamingTheAxis) {
  Json time = Json::parse(read_text(kData + "time.json"));
  for (Json& layer : time["layers"]) {
    for (Json& pass : layer["passes"]) pass["ms"] = 1e308;
  }
  const auto data = read_report_data(time.dump(), "t.json");
  const std::string message = glassbox::testing::message_of<DataError>([&] { (void)report_html(data, "t.json"); });
  EXPECT_TRUE(contains(message, "are too large to draw")) << message;
}

// A named pipe given as the input is refused at once, not waited on
// (tensor/input_file.h). Were report to block on it, after 10 s the test
// opens the other end itself and fails instead of hanging.
TEST(Report, ANamedPipeIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << fifo;
  const glassbox::testing::CommandOutcome r = glassbox::testing::without_blocking_on(
      fifo, [&] { return glassbox::testing::run_command(kCli + " report " + fifo); });
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: " + fifo + ": cannot read: Is a named pipe, not a regular file"))
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "pipe.html"));
}

TEST(Report, AxesTickAtRoundNumbersAndPowers) {
  using namespace glassbox::cli::svg;
  EXPECT_EQ(si(3.1e11, "FLOP/s"), "310 GFLOP/s");
  EXPECT_EQ(si(0.25), "0.25");
  EXPECT_EQ(si(2048), "2.05k");
  const Axis linear = fit_axis("ms", ScaleKind::kLinear, 0.0, 1.86);
  EXPECT_EQ(linear.lo, 0.0);
  EXPECT_EQ(linear.hi, 2.0);
  EXPECT_EQ(ticks(linear), (std::vector<double>{0.0, 0.5, 1.0, 1.5, 2.0}));
  const Axis decades = fit_axis("FLOP/s", ScaleKind::kLog10, 2e9, 3.1e11);
  EXPECT_EQ(decades.lo, 1e9);
  EXPECT_EQ(decades.hi, 1e12);
  EXPECT_EQ(ticks(decades), (std::vector<double>{1e9, 1e10, 1e11, 1e12}));
  const Axis batches = fit_axis("batch", ScaleKind::kLog2, 1, 512);
  EXPECT_EQ(ticks(batches).size(), 10u);                                       // 1, 2, ..., 512
  EXPECT_EQ(ticks(fit_axis("batch", ScaleKind::kLog2, 1, 65536)).size(), 9u);  // every other power past 12
}

}  // namespace
