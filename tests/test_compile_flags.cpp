// tests/test_compile_flags.cpp: one table of compile flags for every program
// (graph/compile_flags.h): what each flag sets in CompileOptions, the notes
// for flags that do nothing on a device, and every `glassbox` verb that
// compiles a graph declaring the same rows (bench_nets: BenchFlags in
// test_bench_session.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/compile_flags.h"
#include "tools/cli/flag_specs.h"

namespace glassbox {
namespace {

TEST(CompileFlags, NoFlagsLeaveTheDefaults) {
  const CompileOptions options = compile_options_from_flags({});
  const CompileOptions defaults;
  EXPECT_EQ(options.precision, defaults.precision);
  EXPECT_EQ(options.layers.algo_search, defaults.layers.algo_search);
  EXPECT_EQ(options.layers.deterministic, defaults.layers.deterministic);
  EXPECT_EQ(options.layers.cpu_conv, defaults.layers.cpu_conv);
  EXPECT_EQ(options.layers.cudnn_api, CudnnApi::kAuto);
  EXPECT_EQ(options.layers.cpu_winograd, defaults.layers.cpu_winograd);
  EXPECT_EQ(options.layout, defaults.layout);
  EXPECT_EQ(options.fusion, defaults.fusion);
  EXPECT_EQ(options.nvtx, defaults.nvtx);
}

TEST(CompileFlags, EachFlagSetsItsOptionAndKeepsTheBase) {
  CompileOptions base;
  base.phase = Phase::kInference;
  base.layer_timing = true;
  const CompileOptions options = compile_options_from_flags(
      {{"--precision", "tf32"}, {"--cudnn-search", ""}, {"--cudnn-api", "graph"}, {"--deterministic", ""},
       {"--cpu-conv", "onednn"},
       {"--no-winograd", ""}, {"--layout", "nchw"}, {"--no-fusion", ""}, {"--no-nvtx", ""}, {"--batch", "8"}},
      base);
  EXPECT_EQ(options.precision, Precision::kTf32);
  EXPECT_EQ(options.layers.algo_search, AlgoSearch::kMeasured);
  EXPECT_EQ(options.layers.cudnn_api, CudnnApi::kGraph);
  EXPECT_TRUE(options.layers.deterministic);
  EXPECT_EQ(options.layers.cpu_conv, CpuConvPath::kOneDnn);
  EXPECT_FALSE(options.layers.cpu_winograd);
  EXPECT_EQ(options.layout, LayoutChoice::kNchw);
  EXPECT_FALSE(options.fusion);
  EXPECT_FALSE(options.nvtx);
  EXPECT_EQ(options.phase, Phase::kInference) << "the program's own choice stays";
  EXPECT_TRUE(options.layer_timing);
}

// Note [What a bit-for-bit resume needs] (train/trainer.h): a checkpoint
// records the flags that choose kernels on its device, so a resume can
// name the one that differs.
TEST(CompileFlags, TheFlagsThatDecideTheBitsAreNamedForTheirDevice) {
  CompileOptions defaults;
  defaults.layers.deterministic = false;
  EXPECT_EQ(compile_flags_deciding_bits(defaults, Device::cpu()), "--layout auto --cpu-conv auto");
  EXPECT_EQ(compile_flags_deciding_bits(defaults, Device::cuda()), "--layout auto --cudnn-api auto");

  const CompileOptions chosen = compile_options_from_flags(
      {{"--precision", "bf16"}, {"--cudnn-search", ""}, {"--cudnn-api", "graph"}, {"--deterministic", ""},
       {"--cpu-conv", "glassbox"}, {"--no-winograd", ""}, {"--layout", "nhwc"}, {"--no-fusion", ""},
       {"--no-nvtx", ""}});
  EXPECT_EQ(compile_flags_deciding_bits(chosen, Device::cpu()),
            "--layout nhwc --cpu-conv glassbox --no-winograd --no-fusion");
  EXPECT_EQ(compile_flags_deciding_bits(chosen, Device::cuda(1)),
            "--layout nhwc --cudnn-api graph --cudnn-search --deterministic --no-fusion");
  // Each flag on its own changes the words, so no difference goes unnamed.
  for (const char* flag : {"--no-winograd", "--no-fusion"}) {
    EXPECT_NE(compile_flags_deciding_bits(compile_options_from_flags({{flag, ""}}, defaults), Device::cpu()),
              compile_flags_deciding_bits(defaults, Device::cpu()))
        << flag;
  }
}

TEST(CompileFlags, ABadValueNamesItsFlag) {
  EXPECT_THROW(compile_options_from_flags({{"--precision", "fp64"}}), ConfigError);
  EXPECT_THROW(compile_options_from_flags({{"--cpu-conv", "fast"}}), ConfigError);
  try {
    compile_options_from_flags({{"--cudnn-api", "v8"}});
    ADD_FAILURE() << "an unknown cuDNN API was taken";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "unknown cuDNN API 'v8'; valid: auto, legacy, graph");
  }
  try {
    compile_options_from_flags({{"--layout", "nhcw"}});
    ADD_FAILURE() << "a misspelt layout was taken";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "unknown layout 'nhcw'; valid: auto, nchw, nhwc");
  }
}

// The autotune cache and an output of the same command in one file would
// overwrite each other, whatever the spelling of the path.
TEST(CompileFlags, AnAutotuneCacheThatIsAlsoAnOutputIsRefused) {
  for (const char* output : {"--json", "--out", "--log", "--logits", "--benchmark_out"}) {
    try {
      compile_options_from_flags({{"--cudnn-search", ""}, {"--autotune-cache", "run.json"}, {output, "./run.json"}});
      ADD_FAILURE() << output << ": one file for both was taken";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--autotune-cache run.json is also ") + output +
                                           ": the run would write both to one file; give the cache a file of its own");
    }
  }
  const CompileOptions apart =
      compile_options_from_flags({{"--cudnn-search", ""}, {"--autotune-cache", "cache.json"}, {"--json", "t.json"}});
  EXPECT_EQ(apart.layers.autotune_cache, "cache.json");
}

// Note [Channels-last values] (graph/layouts.h): by default the CPU stores
// values NHWC in every precision, a GPU in tf32, bf16 and fp16 but not fp32;
// an explicit choice holds on both.
TEST(CompileFlags, TheLayoutChoiceDependsOnTheDeviceAndPrecisionOnlyWhenAutomatic) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16}) {
    EXPECT_TRUE(plans_channels_last(LayoutChoice::kAuto, Device::cpu(), p)) << flag_name_of(p);
    EXPECT_EQ(plans_channels_last(LayoutChoice::kAuto, Device::cuda(), p), p != Precision::kFp32) << flag_name_of(p);
    for (Device d : {Device::cpu(), Device::cuda()}) {
      EXPECT_TRUE(plans_channels_last(LayoutChoice::kNhwc, d, p));
      EXPECT_FALSE(plans_channels_last(LayoutChoice::kNchw, d, p));
    }
  }
  for (LayoutChoice c : {LayoutChoice::kAuto, LayoutChoice::kNchw, LayoutChoice::kNhwc}) {
    EXPECT_EQ(parse_layout_choice(std::string(name_of(c))), c);
  }
}

TEST(CompileFlags, FlagsThatDoNothingOnTheDeviceAreNamed) {
  const std::map<std::string, std::string> gpu_only = {
      {"--cudnn-search", ""}, {"--deterministic", ""}, {"--no-nvtx", ""}};
  EXPECT_EQ(compile_flag_notes(gpu_only, Device::cpu()),
            (std::vector<std::string>{"--cudnn-search chooses cuDNN algorithms; it has no effect on the CPU",
                                      "--deterministic restricts cuDNN algorithms; the CPU path is deterministic "
                                      "already",
                                      "--no-nvtx leaves out the NVTX ranges of a GPU's steps; the CPU's steps have "
                                      "none"}));
  EXPECT_TRUE(compile_flag_notes(gpu_only, Device::cuda()).empty());
  const std::map<std::string, std::string> cpu_only = {{"--cpu-conv", "glassbox"}, {"--no-winograd", ""}};
  EXPECT_TRUE(compile_flag_notes(cpu_only, Device::cpu()).empty());
  EXPECT_EQ(compile_flag_notes(cpu_only, Device::cuda()).size(), 2u);
  EXPECT_EQ(compile_flag_notes({{"--precision", "tf32"}}, Device::cpu()),
            (std::vector<std::string>{"--precision tf32 rounds the inputs of a GPU's tensor-core products to TF32; the "
                                      "CPU computes in fp32, so a tf32 run on the CPU gives fp32's results"}));
  EXPECT_TRUE(compile_flag_notes({{"--precision", "tf32"}}, Device::cuda()).empty());
  EXPECT_TRUE(compile_flag_notes({{"--precision", "bf16"}}, Device::cpu()).empty()) << "the CPU runs bf16";
  EXPECT_TRUE(compile_flag_notes({{"--layout", "nhwc"}}, Device::cpu()).empty()) << "both devices plan layouts";
  EXPECT_TRUE(compile_flag_notes({{"--layout", "nhwc"}}, Device::cuda()).empty()) << "both devices plan layouts";
}

TEST(CompileFlags, EveryVerbThatCompilesAGraphDeclaresTheSameRows) {
  const std::pair<const char*, const std::vector<FlagSpec>*> verbs[] = {
      {"time", &cli::time_flags()},   {"trace", &cli::trace_flags()},         {"kernels", &cli::kernels_flags()},
      {"sweep", &cli::sweep_flags()}, {"max-batch", &cli::max_batch_flags()}, {"train", &cli::train_flags()},
      {"eval", &cli::eval_flags()}};
  for (const auto& [verb, flags] : verbs) {
    for (const FlagSpec& shared : compile_flags()) {
      const auto found = std::find_if(flags->begin(), flags->end(),
                                      [&](const FlagSpec& f) { return f.name == shared.name; });
      ASSERT_NE(found, flags->end()) << verb << " does not take " << shared.name;
      EXPECT_EQ(found->value_name, shared.value_name) << verb << " " << shared.name;
      EXPECT_EQ(found->help, shared.help) << verb << " " << shared.name;
      EXPECT_EQ(std::count_if(flags->begin(), flags->end(), [&](const FlagSpec& f) { return f.name == shared.name; }),
                1)
          << verb << " declares " << shared.name << " twice";
    }
  }
}

}  // namespace
}  // namespace glassbox
