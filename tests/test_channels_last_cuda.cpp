// tests/test_channels_last_cuda.cpp: Note [Channels-last values]
// (graph/layouts.h) on a GPU. Which values the graph stores NHWC there, with
// KRSC filters (Note [KRSC filters]) and layout bridges (Note [Layout
// bridges]) where a layer meets the other order; that training, image
// gradients and bf16 training compute what the all-NCHW graph computes; that
// a checkpoint of KRSC filters holds PyTorch's KCRS and moves to the CPU. The
// first tests need no GPU: the strides and the checkpoint order on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "graph/layouts.h"
#include "optim/sgd.h"
#include "tensor/copy.h"
#include "tensor/safetensors.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"
#include "tests/support/layout_runs.h"
#include "tests/support/temp_dir.h"
#include "train/checkpoint.h"
#include "train/model_file.h"

namespace glassbox {
namespace {

TEST(PackedStrides, NchwAndNhwcOfOneShape) {
  const Shape s{2, 3, 4, 5};
  EXPECT_EQ(packed_strides(s, Layout::kNCHW), (std::array<int64_t, 4>{60, 20, 5, 1}));
  EXPECT_EQ(packed_strides(s, Layout::kNHWC), (std::array<int64_t, 4>{60, 1, 15, 3}));
  EXPECT_EQ(packed_strides(Shape{7, 9}, Layout::kNCHW), (std::array<int64_t, 4>{9, 1, 1, 1}));
  try {
    packed_strides(Shape{7, 9}, Layout::kNHWC);
    ADD_FAILURE() << "NHWC strides of a matrix";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "packed strides: NHWC describes rank 4, not (7, 9)");
  }
  EXPECT_THROW(packed_strides(Shape{1, 2, 3, 4, 5}, Layout::kNCHW), ShapeError);
}

// A filter stored KRSC is read, and written, in PyTorch's KCRS order: what a
// checkpoint holds whatever the layout in memory.
TEST(ChannelsLast, AKrscFilterIsSavedAndLoadedInKcrsOrder) {
  Context ctx = Context::cpu();
  const Shape w{2, 3, 2, 2};
  std::vector<float> kcrs(static_cast<size_t>(w.numel()));
  for (size_t i = 0; i < kcrs.size(); ++i) kcrs[i] = static_cast<float>(i);
  const Tensor krsc = ctx.allocate(w, DType::kFloat32, MemoryCategory::kParameters).with_layout(Layout::kNHWC);
  write_in_nchw_order(ctx, kcrs, krsc);
  const std::vector<float> stored = to_vector<float>(ctx, krsc);
  // w[k=0, c=1, r=0, s=0] = 4 lies at KRSC offset 1.
  EXPECT_EQ(stored[1], 4.0f);
  EXPECT_EQ(stored, channels_last_from_nchw(kcrs, w));
  EXPECT_EQ(values_in_nchw_order(ctx, krsc), kcrs);
  const HostTensor saved = model_file::host_copy(ctx, "conv.weight", krsc);
  std::vector<float> in_file(kcrs.size());
  std::memcpy(in_file.data(), saved.bytes.data(), saved.bytes.size());
  EXPECT_EQ(in_file, kcrs) << "the file holds KCRS";
}

// Every kind of meeting of the two orders on a GPU:
//   conv_in reads the NCHW images and writes NHWC (a bridge on its input);
//   a residual add and batch norm keep NHWC; max pooling NHWC to NHWC;
//   a concat of NHWC branches; conv_to_nchw reads NHWC and writes NCHW for
//   an LRN (which reads NCHW only); conv_from_nchw the reverse; pool_to_nchw
//   reads NHWC and writes NCHW for another LRN; global average pooling
//   writes NHWC for a Flatten that reads it.
Graph mixed_layouts(int batch) {
  GraphBuilder g;
  const Value images = g.input("images", {batch, 3, 16, 16});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  const Value a = g.relu(g.conv(images, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv_in"), "relu_in");
  const Value b = g.relu(
      g.batch_norm(g.conv(a, {.out_channels = 16, .kernel = 3, .pad = 1, .bias = false}, "conv_bn"), {}, "bn"),
      "relu_bn");
  const Value p = g.max_pool(g.add({a, b}, "add"), {.kernel = 2, .stride = 2}, "pool_nhwc");
  const Value c = g.concat({g.relu(g.conv(p, {.out_channels = 8, .kernel = 1}, "conv_1x1"), "relu_1x1"),
                            g.relu(g.conv(p, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv_3x3"), "relu_3x3")},
                           "cat");
  const Value d = g.lrn(g.relu(g.conv(c, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv_to_nchw"), "relu_to"),
                        {}, "lrn");
  const Value f = g.relu(g.conv(d, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv_from_nchw"), "relu_from");
  const Value e = g.lrn(g.max_pool(f, {.kernel = 2, .stride = 2}, "pool_to_nchw"), {}, "lrn2");
  const Value h = g.relu(g.conv(e, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv_last"), "relu_last");
  const Value logits = g.linear(g.flatten(g.global_avg_pool(h, "gap"), "flatten"), {.out_features = 5}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

TEST(ChannelsLastCuda, EveryLayerThatCanReadsAndWritesNhwc) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  Graph graph = mixed_layouts(2);
  graph.compile(ctx, {.layout = LayoutChoice::kNhwc});
  std::string nhwc;
  for (const Node& node : graph.nodes()) {
    if (node.channels_last) nhwc += (nhwc.empty() ? "" : " ") + node.name;
    EXPECT_EQ(node.value.layout(), node.channels_last ? Layout::kNHWC : Layout::kNCHW) << node.name;
  }
  EXPECT_EQ(nhwc,
            "conv_in relu_in conv_bn bn relu_bn add pool_nhwc conv_1x1 relu_1x1 conv_3x3 relu_3x3 cat "
            "conv_from_nchw relu_from conv_last relu_last gap");
  EXPECT_EQ(layout_path(graph.nodes(), graph.node("conv_in")), "NHWC from NCHW");
  EXPECT_EQ(layout_path(graph.nodes(), graph.node("conv_to_nchw")), "NCHW from NHWC");
  EXPECT_EQ(layout_path(graph.nodes(), graph.node("pool_to_nchw")), "NCHW from NHWC");
  EXPECT_EQ(layout_path(graph.nodes(), graph.node("add")), "NHWC");
  EXPECT_EQ(layout_path(graph.nodes(), graph.node("fc")), "");
  // Note [KRSC filters]: the filters of convolutions that write NHWC.
  for (const NamedTensor& p : graph.named_parameters()) {
    const bool krsc = p.name.ends_with(".weight") && p.name.starts_with("conv_") &&
                      p.name != "conv_to_nchw.weight";
    EXPECT_EQ(p.tensor.layout(), krsc ? Layout::kNHWC : Layout::kNCHW) << p.name;
  }
}

TEST(ChannelsLastCuda, TheDefaultIsNhwcOnAGpuExceptInFp32) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  for (Precision precision : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    Graph graph = mixed_layouts(2);
    graph.compile(ctx, {.precision = precision});
    EXPECT_EQ(graph.node("conv_in").channels_last, precision != Precision::kFp32) << flag_name_of(precision);
  }
}

TEST(ChannelsLastCuda, TrainingMatchesTheNchwGraph) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  auto run = [&](bool channels_last) {
    return testing::train_three_steps(ctx, [] { return mixed_layouts(3); }, channels_last,
                                      Graph::ParamGrads::kReplace);
  };
  testing::expect_same_training(run(true), run(false));
}

// The bridges' backward: conv_in's input gradient is computed NHWC and
// converted to the NCHW images' order.
TEST(ChannelsLastCuda, ImageGradientsMatchTheNchwGraph) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  auto image_gradient = [&](LayoutChoice layout) {
    Graph graph = mixed_layouts(2);
    graph.compile(ctx, {.memory_reuse = MemoryReuse::kOff, .input_gradients = {"images"}, .layout = layout});
    fill_synthetic_batch(ctx, graph, 5);
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx);
    return to_vector<float>(ctx, graph.input_gradient("images"));
  };
  testing::expect_close(image_gradient(LayoutChoice::kNhwc), image_gradient(LayoutChoice::kNchw), 1e-5,
                        "d loss / d images");
}

// bf16 on NHWC against bf16 on NCHW: the same rounding points, other sums;
// three steps agree within bf16's precision. The first step's gradients, all
// parameters' in one vector, differ by at most 2^-4 of their largest
// magnitude: a few roundings of at most 2^-8 each, and room for a max-pooling window
// whose two largest values round to one in bf16 (cuDNN documents no rule for
// which takes the gradient, and the two layouts run other kernels).
TEST(ChannelsLastCuda, Bf16TrainingMatchesTheNchwGraph) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  auto run = [&](bool channels_last) {
    return testing::train_three_steps(ctx, [] { return mixed_layouts(3); }, channels_last,
                                      Graph::ParamGrads::kReplace, Precision::kBf16);
  };
  const testing::LayoutRun nhwc = run(true), nchw = run(false);
  testing::expect_close(nhwc.losses, nchw.losses, 2e-2, "bf16 losses");
  testing::expect_close(nhwc.parameters, nchw.parameters, 2e-2, "bf16 parameters after three steps");
  ASSERT_EQ(nhwc.gradients.size(), nchw.gradients.size());
  EXPECT_TRUE(std::any_of(nchw.gradients.begin(), nchw.gradients.end(), [](float g) { return g != 0.0f; }))
      << "no gradient to compare";
  EXPECT_LE(testing::relative_error(nchw.gradients, nhwc.gradients), 0x1p-4) << "bf16 first step's gradients";
}

NetSpec mixed_net() {
  return {.name = "MixedLayouts", .description = "a test network", .sample = Shape{3, 16, 16}, .classes = 5,
          .gpu_batch = 2, .cpu_batch = 2, .build = [](int batch) { return mixed_layouts(batch); }};
}

// A checkpoint of a GPU graph with KRSC filters holds PyTorch's order: the
// CPU's NCHW graph loads it to the same parameters and momentum, and a GPU
// graph with KRSC filters loads that back.
TEST(ChannelsLastCuda, ACheckpointOfKrscFiltersMovesToTheCpu) {
  GLASSBOX_REQUIRE_CUDA();
  Context gpu = Context::cuda(), cpu = Context::cpu();
  const NetSpec net = mixed_net();
  testing::TempDir dir;
  auto compiled = [&](Context& ctx, LayoutChoice layout, uint64_t seed) {
    Graph graph = net.build(2);
    graph.compile(ctx, {.seed = seed, .layout = layout});
    return graph;
  };
  Graph trained = compiled(gpu, LayoutChoice::kNhwc, 1);
  Sgd sgd(gpu, trained.parameters(), trained.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f});
  fill_synthetic_batch(gpu, trained, 5);
  for (int step = 0; step < 2; ++step) {
    trained.forward(gpu, Phase::kTraining);
    trained.backward(gpu);
    sgd.step(gpu);
  }
  save_checkpoint(dir.file("gpu"), gpu, trained, net, sgd,
                  {.epoch = 1, .step = 2, .run_id = "0123456789abcdef"});
  Graph on_cpu = compiled(cpu, LayoutChoice::kNchw, 9);
  Sgd cpu_sgd(cpu, on_cpu.parameters(), on_cpu.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f});
  load_checkpoint(dir.file("gpu"), cpu, on_cpu, net, cpu_sgd);
  const std::vector<float> parameters = testing::in_nchw_order(gpu, trained.named_parameters());
  EXPECT_EQ(testing::in_nchw_order(cpu, on_cpu.named_parameters()), parameters);
  EXPECT_EQ(testing::in_nchw_order(cpu, on_cpu.named_views(cpu_sgd.velocity())),
            testing::in_nchw_order(gpu, trained.named_views(sgd.velocity())));
  save_model(dir.file("cpu.safetensors"), cpu, on_cpu, net, 2);
  Graph back = compiled(gpu, LayoutChoice::kNhwc, 5);
  load_model(dir.file("cpu.safetensors"), gpu, back, net);
  EXPECT_EQ(to_vector<float>(gpu, back.parameters()), to_vector<float>(gpu, trained.parameters()))
      << "the same KRSC bytes";
}

}  // namespace
}  // namespace glassbox
