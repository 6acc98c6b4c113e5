// tests/test_engine_config.cpp: Note [Engine configurations]
// (layers/conv2d/engine_config.h): a configuration's name in reports, the
// options' verdict on its numerical notes, which of the heuristics'
// configurations a search takes, and the dimensions and strides
// that describe a convolution's tensors to cuDNN's graph API.
#include <gtest/gtest.h>

#include "layers/conv2d/engine_config.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace glassbox {
namespace {

TEST(EngineConfig, ItsNameHasTheEngineAndEveryKnob) {
  EXPECT_EQ(engine_config_name({.engine = 0}), "engine 0");
  EXPECT_EQ(engine_config_name({.engine = 12, .knobs = {{2, 3}, {14, 4}, {43, 1}}}),
            "engine 12 (TILE_SIZE 3, STAGES 4, SWAP_AB 1)");
  EXPECT_EQ(knob_name(0), "SPLIT_K");
  EXPECT_EQ(knob_name(42), "WARP_SPEC_CFG");
  EXPECT_EQ(knob_name(44), "KNOB_44") << "a knob a later cuDNN adds is named by number";
  EXPECT_EQ(knob_name(-1), "KNOB_-1");
}

TEST(EngineConfig, TheNotesThatMatterAreNamed) {
  EXPECT_EQ(numerical_notes_text(0), "");
  EXPECT_EQ(numerical_notes_text(kNoteTensorCore | kNoteNondeterministic), "tensor-op, nondeterministic");
  EXPECT_EQ(numerical_notes_text(kNoteWinograd | kNoteFft | kNoteDownConvertInputs | kNoteReducedPrecisionReduction),
            "winograd, fft, down-converts its inputs, reduced-precision sums");
}

// The legacy algorithms' rules (Note [Math type per pass]) in the graph API's notes.
TEST(EngineConfig, TheOptionsRefuseWhatTheyMust) {
  const struct {
    uint32_t notes;
    DType data;
    bool tf32, deterministic;
    const char* refusal;  // nullptr: allowed
  } cases[] = {
      {0, DType::kFloat32, false, false, nullptr},
      {0, DType::kFloat32, false, true, nullptr},
      {kNoteNondeterministic, DType::kFloat32, false, false, nullptr},
      {kNoteNondeterministic, DType::kBFloat16, false, true, "not deterministic"},
      {kNoteTensorCore, DType::kFloat32, false, false, "uses tensor-op math, TF32 is off"},
      {kNoteTensorCore, DType::kFloat32, true, false, nullptr},
      {kNoteTensorCore, DType::kBFloat16, false, false, nullptr},
      {kNoteTensorCore, DType::kFloat16, false, false, nullptr},
      {kNoteTensorCore | kNoteDownConvertInputs, DType::kFloat32, true, false, "would down-convert float data"},
      {kNoteDownConvertInputs, DType::kFloat16, false, false, "converts the 16-bit data (DOWN_CONVERT_INPUTS)"},
      {kNoteReducedPrecisionReduction, DType::kFloat32, true, false, nullptr},
      {kNoteReducedPrecisionReduction, DType::kBFloat16, false, false,
       "sums in reduced precision (REDUCED_PRECISION_REDUCTION), not fp32"},
      {kNoteWinograd | kNoteFft, DType::kFloat32, false, true, nullptr},
  };
  for (const auto& c : cases) {
    const std::optional<std::string> refusal = engine_refusal(c.notes, c.data, c.tf32, c.deterministic);
    const std::string what = cat("notes ", numerical_notes_text(c.notes), ", ", name_of(c.data), c.tf32 ? ", tf32" : "",
                                 c.deterministic ? ", deterministic" : "");
    if (c.refusal == nullptr) {
      EXPECT_FALSE(refusal.has_value()) << what << ": " << refusal.value_or("");
    } else {
      EXPECT_EQ(refusal.value_or("(allowed)"), c.refusal) << what;
    }
  }
}

// fp32 without TF32 on a GPU with tensor cores: mode A offers tensor-core
// engines first. The limit counts only the ones the run allows, so the
// fallback list's plain engines are still taken; the refused ones follow,
// with their reason.
TEST(EngineConfig, TheLimitCountsOnlyWhatTheRunAllows) {
  auto config = [](int64_t engine, uint32_t notes) { return EngineConfig{.engine = engine, .numerical_notes = notes}; };
  std::vector<EngineConfig> mode_a, fallback;
  for (int64_t e = 0; e < 6; ++e) mode_a.push_back(config(e, kNoteTensorCore));
  mode_a.push_back(config(10, 0));
  fallback = {config(10, 0), config(11, 0), config(12, kNoteTensorCore), config(13, 0)};
  const auto refusal = [](const EngineConfig& c) {
    return engine_refusal(c.numerical_notes, DType::kFloat32, /*tf32=*/false, /*deterministic=*/false);
  };
  const std::vector<SelectedConfig> picked = select_engine_configs({mode_a, fallback}, 3, 3, refusal);
  std::vector<int64_t> engines;
  for (const SelectedConfig& p : picked) engines.push_back(p.config.engine);
  EXPECT_EQ(engines, (std::vector<int64_t>{10, 11, 13, 0, 1, 2})) << "allowed first, each once, then refused";
  for (size_t i = 0; i < picked.size(); ++i) {
    EXPECT_EQ(picked[i].refusal.has_value(), i >= 3) << i;
  }
  EXPECT_EQ(picked[3].refusal.value_or(""), "uses tensor-op math, TF32 is off");
  // Nothing refused: the heuristics' order, up to the limit.
  const std::vector<SelectedConfig> all = select_engine_configs({mode_a}, 4, 4, [](const EngineConfig&) {
    return std::optional<std::string>();
  });
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].config.engine, 3);
  EXPECT_TRUE(select_engine_configs({}, 4, 4, refusal).empty());
}

// Configurations that cuDNN compiles at run time: at most the limit of them
// are allowed, in the heuristics' order; the later ones are refused by name,
// and precompiled ones further down take their places.
TEST(EngineConfig, ASearchBuildsFewConfigurationsCompiledAtRunTime) {
  auto config = [](int64_t engine, bool compiled_at_run_time) {
    return EngineConfig{.engine = engine, .behavior_notes = compiled_at_run_time ? kNoteRuntimeCompilation : 0u};
  };
  const std::vector<EngineConfig> offered = {config(0, true), config(1, true), config(2, false), config(3, true),
                                             config(4, false), config(5, false)};
  const auto none = [](const EngineConfig&) { return std::optional<std::string>(); };
  const std::vector<SelectedConfig> picked = select_engine_configs({offered}, 4, 1, none);
  std::vector<int64_t> engines;
  for (const SelectedConfig& p : picked) engines.push_back(p.config.engine);
  EXPECT_EQ(engines, (std::vector<int64_t>{0, 2, 4, 5, 1, 3}));
  for (size_t i = 0; i < picked.size(); ++i) EXPECT_EQ(picked[i].refusal.has_value(), i >= 4) << i;
  EXPECT_EQ(picked[4].refusal.value_or(""), "compiled at run time, past the 1 such configurations a search builds");
  // A limit of none: only precompiled ones are built.
  const std::vector<SelectedConfig> precompiled = select_engine_configs({offered}, 6, 0, none);
  engines.clear();
  for (const SelectedConfig& p : precompiled) engines.push_back(p.config.engine);
  EXPECT_EQ(engines, (std::vector<int64_t>{2, 4, 5, 0, 1, 3}));
}

// The graph API takes the dimensions in NCHW (KCRS) order whatever the
// layout; the strides are the layout's, as the tensors are packed.
TEST(EngineConfig, TensorsAreDescribedInTheirLayout) {
  const GraphTensorLayout nchw = graph_tensor_layout({2, 3, 4, 5}, false);
  EXPECT_EQ(nchw.dims, (std::array<int64_t, 4>{2, 3, 4, 5}));
  EXPECT_EQ(nchw.strides, (std::array<int64_t, 4>{60, 20, 5, 1}));
  const GraphTensorLayout nhwc = graph_tensor_layout({2, 3, 4, 5}, true);
  EXPECT_EQ(nhwc.dims, (std::array<int64_t, 4>{2, 3, 4, 5}));
  EXPECT_EQ(nhwc.strides, (std::array<int64_t, 4>{60, 1, 15, 3}));
  // The same strides as the tensors the graph stores (tensor/tensor.h).
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    EXPECT_EQ(graph_tensor_layout({2, 3, 4, 5}, layout == Layout::kNHWC).strides,
              packed_strides(Shape{2, 3, 4, 5}, layout));
  }
  try {
    graph_tensor_layout({2, 3, 4}, false);
    ADD_FAILURE() << "a rank-3 tensor was described";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "graph_tensor_layout: a convolution tensor has 4 dimensions, not 3");
  }
}

}  // namespace
}  // namespace glassbox
