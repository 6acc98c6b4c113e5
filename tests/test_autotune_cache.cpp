// tests/test_autotune_cache.cpp: Note [Autotune cache]
// (layers/conv2d/autotune_cache.h): the key holds everything a measurement
// depends on; the file round-trips, is written whole on each insert, read
// again by a later run, and refused by name when it is not a cache; the
// flags that ask for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/compile_flags.h"
#include "layers/conv2d/autotune_cache.h"
#include "tensor/error.h"
#include "tests/support/devices.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

ConvProblem problem() {
  return {.device = "NVIDIA H100 80GB HBM3", .cudnn = "9.19.0", .pass = "forward", .data = "bfloat16",
          .layout = "NHWC", .x = {64, 64, 56, 56}, .w = {64, 64, 3, 3}, .y = {64, 64, 56, 56},
          .pad_h = 1, .pad_w = 1, .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1, .groups = 1,
          .math = 1, .candidates = "legacy+graph", .workspace_limit = uint64_t{4} << 30};
}

const std::vector<MeasuredAlgorithm> kResults = {
    {.algo = 1, .status = 0, .time_ms = 0.25f, .memory = 1 << 20, .math = 1, .deterministic = true},
    {.algo = 6, .status = 0, .time_ms = 0.5f, .memory = 0, .math = 0, .deterministic = false},
    {.algo = 4, .status = 9, .time_ms = -1.0f, .memory = 0, .math = 0, .deterministic = false},
    {.algo = -1, .status = 0, .time_ms = 0.125f, .memory = 4096, .math = 0, .deterministic = true,
     .engine = {.engine = 12, .knobs = {{2, 3}, {14, 4}}, .numerical_notes = kNoteTensorCore, .behavior_notes = 0}}};

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(AutotuneCache, TheKeyHoldsEverythingAMeasurementDependsOn) {
  const ConvProblem p = problem();
  EXPECT_EQ(p.key(), "NVIDIA H100 80GB HBM3 | cuDNN 9.19.0 | forward | bfloat16 NHWC | x 64x64x56x56 w 64x64x3x3 "
                     "y 64x64x56x56 | pad 1x1 stride 1x1 dilation 1x1 groups 1 | math 1 | legacy+graph"
                     " | workspace limit 4294967296");
  std::vector<ConvProblem> others(17, p);
  others[0].device = "NVIDIA H200";
  others[1].cudnn = "9.20.0";
  others[2].pass = "backward-data";
  others[3].data = "float16";
  others[4].layout = "NCHW";
  others[5].x[0] = 32;
  others[6].w[2] = 1;
  others[7].y[3] = 28;
  others[8].pad_w = 0;
  others[9].stride_h = 2;
  others[10].dilation_w = 2;
  others[11].groups = 2;
  others[12].math = 0;
  others[13].candidates = "legacy";
  others[14].fused_bias_relu = true;
  others[15].deterministic = true;
  others[16].workspace_limit = uint64_t{1} << 30;
  for (size_t i = 0; i < others.size(); ++i) EXPECT_NE(others[i].key(), p.key()) << "change " << i;
}

TEST(AutotuneCache, TheFileRoundTrips) {
  const std::map<std::string, std::vector<MeasuredAlgorithm>> entries = {{problem().key(), kResults},
                                                                         {"another", {kResults[1]}}};
  EXPECT_EQ(parse_autotune_json(autotune_json(entries), "cache.json"), entries);
}

// Each insert writes the file whole; a later run (here: the caches closed
// and opened again) reads what the earlier one measured.
TEST(AutotuneCache, ALaterRunReadsWhatAnEarlierOneMeasured) {
  const testing::TempDir dir;
  const std::string path = dir / "cudnn.json";
  AutotuneCache::close_all();
  AutotuneCache& first = AutotuneCache::open(path);
  EXPECT_EQ(first.size(), 0u) << "no file yet: an empty cache";
  EXPECT_EQ(&AutotuneCache::open(path), &first) << "one cache per path for the run";
  first.insert(problem().key(), kResults);
  ASSERT_TRUE(std::filesystem::exists(path));
  AutotuneCache::close_all();
  const AutotuneCache& later = AutotuneCache::open(path);
  ASSERT_NE(later.find(problem().key()), nullptr);
  EXPECT_EQ(*later.find(problem().key()), kResults);
  EXPECT_EQ(later.find("another problem"), nullptr);

  AutotuneCache& run_only = AutotuneCache::open("");
  run_only.insert("k", kResults);
  EXPECT_EQ(AutotuneCache::open("").size(), 1u);
  AutotuneCache::close_all();
}

TEST(AutotuneCache, AFileThatIsNotACacheIsRefusedByName) {
  const testing::TempDir dir;
  const std::string path = dir / "bad.json";
  const std::string valid = autotune_json({{"k", kResults}});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = valid;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const struct {
    std::string text, message;
  } cases[] = {
      {"{\"kind\": ", "not JSON: at byte 10: "},
      {"[1, 2]", "the document is a JSON array, not an object"},
      {with("glassbox.autotune", "glassbox.time"), "its \"kind\" is not \"glassbox.autotune\""},
      {with("\"version\": 2", "\"version\": 3"), "its \"version\" is not 2"},
      {with("\"version\": 2", "\"version\": 1"), "its \"version\" is 1, which holds the legacy algorithms only"},
      {with("\"index\": 12", "\"index\": -12"),
       "entry 'k', result 3: \"engine\": \"index\" is not an integer from 0 to 2147483647"},
      {with("\"knobs\"", "\"knob\""), "entry 'k', result 3: \"engine\": \"knobs\" is not a list"},
      {with("\"behavior_notes\"", "\"behaviour_notes\""), "entry 'k', result 3: \"engine\" has no \"behavior_notes\""},
      {with("\"algo\": 1", "\"algo\": \"one\""), "entry 'k', result 0: \"algo\" is not an integer"},
      {with("\"memory\": 1048576", "\"memory\": -5"), "entry 'k', result 0: \"memory\" is negative"},
      {with("\"deterministic\": true", "\"deterministic\": 1"),
       "entry 'k', result 0: \"deterministic\" is not true or false"},
      {with("\"ms\": 0.25,", ""), "entry 'k', result 0 has no \"ms\""},
  };
  for (const auto& c : cases) {
    write(path, c.text);
    AutotuneCache::close_all();
    try {
      AutotuneCache::open(path);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const DataError& e) {
      const std::string expected = path + ": not a Glassbox autotune cache (glassbox.autotune v2): " + c.message;
      EXPECT_EQ(std::string(e.what()).substr(0, expected.size()), expected) << e.what();
    }
  }
  try {
    AutotuneCache::open(dir.path());  // a directory
    ADD_FAILURE() << "a directory was read as a cache";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
  }
  AutotuneCache::close_all();
}

TEST(AutotuneCache, AFileThatCannotBeWrittenIsNamed) {
  AutotuneCache::close_all();
  AutotuneCache& cache = AutotuneCache::open("/nonexistent-dir/cudnn.json");
  try {
    cache.insert("k", kResults);
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/cudnn.json"), std::string::npos) << e.what();
  }
  AutotuneCache::close_all();
}

TEST(AutotuneCache, TheFlagKeepsWhatTheSearchMeasures) {
  const CompileOptions options = compile_options_from_flags({{"--cudnn-search", ""}, {"--autotune-cache", "c.json"}});
  EXPECT_EQ(options.layers.autotune_cache, "c.json");
  EXPECT_EQ(options.layers.algo_search, AlgoSearch::kMeasured);
  try {
    compile_options_from_flags({{"--autotune-cache", "c.json"}});
    ADD_FAILURE() << "a cache without a search";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--autotune-cache keeps what --cudnn-search measures; give --cudnn-search too");
  }
  const std::vector<std::string> notes =
      compile_flag_notes({{"--cudnn-search", ""}, {"--autotune-cache", "c.json"}}, Device::cpu());
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "--autotune-cache keeps cuDNN's measured algorithms; it has no effect on the CPU"),
            notes.end());
}

// Two convolutions of one shape: the measured search times the first, the
// second takes its results; a second compile against the file measures
// nothing and chooses what the first did.
Graph two_alike() {
  GraphBuilder g;
  const Value images = g.input("images", {4, 8, 16, 16});
  const Value labels = g.input("labels", {4}, DType::kInt32);
  Value x = g.relu(g.conv(images, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv_a"), "relu_a");
  x = g.relu(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv_b"), "relu_b");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(g.flatten(x), {.out_features = 3}, "fc"), labels));
}

TEST(AutotuneCache, AMeasuredSearchIsKeptForTheSameProblem) {
  GLASSBOX_REQUIRE_CUDA();
  const testing::TempDir dir;
  const std::string path = dir / "cudnn.json";
  AutotuneCache::close_all();
  Context ctx = Context::cuda();
  CompileOptions options = compile_options_from_flags({{"--cudnn-search", ""}, {"--autotune-cache", path}});
  Graph first = two_alike();
  first.compile(ctx, options);
  const std::string a = first.node("conv_a").layer->algorithms(), b = first.node("conv_b").layer->algorithms();
  EXPECT_EQ(a.find("as measured before"), std::string::npos) << a;
  EXPECT_NE(b.find("as measured before for the same problem (" + path + ")"), std::string::npos) << b;
  AutotuneCache::close_all();
  EXPECT_EQ(AutotuneCache::open(path).size(), 3u) << "one problem, three passes, in the file";
  Graph second = two_alike();
  second.compile(ctx, options);
  const std::string again = second.node("conv_a").layer->algorithms();
  EXPECT_NE(again.find("as measured before"), std::string::npos) << again;
  EXPECT_EQ(again.substr(0, again.find(", measured")), a.substr(0, a.find(", measured")))
      << "the same algorithms from the same results";
  AutotuneCache::close_all();
}

}  // namespace
}  // namespace glassbox
