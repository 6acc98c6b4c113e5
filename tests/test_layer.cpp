// tests/test_layer.cpp: the checks every layer call goes through
// (layers/layer.cpp): call order, argument counts, and each tensor's presence,
// shape, type and device, named by the layer and the tensor's role. Linear
// stands for every layer: it has an input and two parameters.
#include <gtest/gtest.h>

#include <functional>

#include "layers/linear/linear.h"
#include "tests/support/fake_device.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

std::string shape_error(const std::function<void()>& call) {
  try {
    call();
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "(no error)";
}

// fc1: x (3, 4) -> y (3, 2); weight (2, 4), bias (2), all on the CPU.
struct Fc1 {
  Context ctx = Context::cpu();
  Linear layer{"fc1", {.out_features = 2}};
  testing::LayerHarness h{ctx, layer, {Shape{3, 4}}};
  Tensor tensor(Shape shape, DType dtype = DType::kFloat32) {
    return ctx.allocate(std::move(shape), dtype, MemoryCategory::kData);
  }
  std::string forward_error(std::vector<Tensor> inputs, Tensor output, std::vector<Tensor> params) {
    return shape_error([&] { layer.forward(ctx, {.inputs = inputs, .output = output, .params = params}); });
  }
  std::string backward_error(std::vector<Tensor> inputs, std::vector<Tensor> input_grads, std::vector<GradMode> modes,
                             std::vector<Tensor> params, std::vector<Tensor> param_grads) {
    return shape_error([&] {
      layer.backward(ctx, {.inputs = inputs,
                           .output = h.output,
                           .output_grad = h.output_grad,
                           .input_grads = input_grads,
                           .input_grad_modes = modes,
                           .params = params,
                           .param_grads = param_grads});
    });
  }
};

TEST(Layer, CallsOutOfOrderSayWhatComesFirst) {
  Context ctx = Context::cpu();
  Linear fc("fc1", {.out_features = 2});
  EXPECT_EQ(shape_error([&] { fc.prepare(ctx); }),
            "fc1 (Linear): prepare before its input shapes are known (bind first)");
  fc.bind(std::vector<Shape>{Shape{3, 4}});
  EXPECT_EQ(shape_error([&] { fc.forward(ctx, {}); }),
            "fc1 (Linear): forward before prepare (compile the graph first)");
  EXPECT_EQ(shape_error([&] { fc.backward(ctx, {}); }),
            "fc1 (Linear): backward before prepare (compile the graph first)");
  fc.prepare(ctx);
  EXPECT_EQ(shape_error([&] { fc.forward(ctx, {}); }), "fc1 (Linear): forward with 0 input(s), prepared for 1");
}

// What a layer reports of itself reads its shapes: before bind it has none,
// and says so instead of indexing an empty list.
TEST(Layer, AnUnboundLayerSaysItHasNoShapesYet) {
  Linear fc("fc1", {.out_features = 2});
  const std::string unbound =
      "fc1 (Linear): its shapes are asked for before they are known (bind first; a graph binds each layer it is "
      "built with)";
  EXPECT_EQ(shape_error([&] { (void)fc.describe(); }), unbound);
  EXPECT_EQ(shape_error([&] { (void)fc.macs(); }), unbound);
  EXPECT_EQ(shape_error([&] { (void)fc.param_specs(); }), unbound);
  EXPECT_EQ(shape_error([&] { (void)fc.output_shape(); }), unbound);
  fc.bind(std::vector<Shape>{Shape{3, 4}});
  EXPECT_EQ(fc.macs(), 3 * 4 * 2);
  EXPECT_EQ(fc.param_specs().size(), 2u);
}

TEST(Layer, ForwardCountsItsInputsAndParameters) {
  Fc1 f;
  const testing::LayerHarness& h = f.h;
  EXPECT_EQ(f.forward_error(h.inputs, h.output, h.params), "(no error)");
  EXPECT_EQ(f.forward_error({h.inputs[0], h.inputs[0]}, h.output, h.params),
            "fc1 (Linear): forward with 2 input(s), prepared for 1");
  EXPECT_EQ(f.forward_error(h.inputs, h.output, {h.params[0]}), "fc1 (Linear): forward with 1 parameter(s), expected 2");
}

TEST(Layer, ForwardNamesTheTensorThatDoesNotFit) {
  Fc1 f;
  const testing::LayerHarness& h = f.h;
  const Tensor on_gpu = testing::tensor_claiming(Device::cuda(0), Shape{3, 4});
  EXPECT_EQ(f.forward_error({Tensor()}, h.output, h.params), "fc1 (Linear): input 0 is missing");
  EXPECT_EQ(f.forward_error({f.tensor(Shape{3, 5})}, h.output, h.params),
            "fc1 (Linear): input 0 has shape (3, 5), expected (3, 4)");
  EXPECT_EQ(f.forward_error({f.tensor(Shape{3, 4}, DType::kInt32)}, h.output, h.params),
            "fc1 (Linear): input 0 is int32, expected float32");
  EXPECT_EQ(f.forward_error({on_gpu}, h.output, h.params), "fc1 (Linear): input 0 is on cuda:0, the context is cpu");
  EXPECT_EQ(f.forward_error(h.inputs, f.tensor(Shape{2, 3}), h.params),
            "fc1 (Linear): output has shape (2, 3), expected (3, 2)");
  EXPECT_EQ(f.forward_error(h.inputs, h.output, {h.params[0], f.tensor(Shape{3})}),
            "fc1 (Linear): parameter 1 has shape (3), expected (2)");
}

TEST(Layer, BackwardCountsAndChecksItsGradients) {
  Fc1 f;
  const testing::LayerHarness& h = f.h;
  const std::vector<GradMode> write = {GradMode::kWrite};
  EXPECT_EQ(f.backward_error(h.inputs, h.input_grads, write, h.params, h.param_grads), "(no error)");
  EXPECT_EQ(f.backward_error(h.inputs, {}, write, h.params, h.param_grads),
            "fc1 (Linear): backward needs 1 input(s), input gradient(s) and grad mode(s); got 1, 0 and 1");
  EXPECT_EQ(f.backward_error(h.inputs, h.input_grads, write, h.params, {h.param_grads[0]}),
            "fc1 (Linear): backward with 2 parameter(s) and 1 parameter gradients, expected 2");
  EXPECT_EQ(f.backward_error(h.inputs, {f.tensor(Shape{4, 3})}, write, h.params, h.param_grads),
            "fc1 (Linear): gradient of input 0 has shape (4, 3), expected (3, 4)");
  EXPECT_EQ(f.backward_error(h.inputs, h.input_grads, write, h.params, {h.param_grads[0], Tensor()}),
            "fc1 (Linear): gradient of parameter 1 is missing");
  EXPECT_EQ(shape_error([&] {
              f.layer.backward(f.ctx, {.inputs = h.inputs,
                                       .output = h.output,
                                       .input_grads = h.input_grads,
                                       .input_grad_modes = write,
                                       .params = h.params,
                                       .param_grads = h.param_grads});
            }),
            "fc1 (Linear): backward without an output gradient: only a loss starts backward without one");
}

// A layer whose every call fails in a library, as a cuDNN call does that
// refuses its descriptors.
class LibraryFails final : public Layer {
 public:
  explicit LibraryFails(bool in_prepare = false) : Layer("lib1"), in_prepare_(in_prepare) {}
  std::string_view type() const override { return "LibraryFails"; }
  std::string describe() const override { return "fails in cuDNN"; }
  Shape infer(std::span<const Shape> inputs) const override { return inputs[0]; }

 private:
  [[noreturn]] static void refuse() {
    throw_library_error("cuDNN", "cudnnSomething(handle, x)", "layers/somewhere.cpp", 12, 3,
                        "CUDNN_STATUS_BAD_PARAM");
  }
  bool in_prepare_;
  void prepare_cpu(Context&, const PrepareOptions&) override {
    if (in_prepare_) refuse();
  }
  void prepare_cuda(Context&, const PrepareOptions&) override { refuse(); }
  void forward_cpu(Context&, const ForwardArgs&) override { refuse(); }
  void forward_cuda(Context&, const ForwardArgs&) override { refuse(); }
  void backward_cpu(Context&, const BackwardArgs&) override { refuse(); }
  void backward_cuda(Context&, const BackwardArgs&) override { refuse(); }
};

// Which of a network's layers a library refused, in which pass, on what input.
TEST(Layer, ALibrarysErrorNamesTheLayerThePassAndTheInput) {
  Context ctx = Context::cpu();
  LibraryFails layer;
  testing::LayerHarness h(ctx, layer, {Shape{3, 4}});
  for (const char* pass : {"forward", "backward"}) {
    try {
      if (std::string_view(pass) == "forward") {
        h.forward();
      } else {
        h.backward();
      }
      ADD_FAILURE() << pass << " passed";
    } catch (const LibraryError& e) {
      EXPECT_EQ(std::string(e.what()),
                cat("lib1 (LibraryFails) ", pass, ", input (3, 4) float32: cuDNN error 3 (CUDNN_STATUS_BAD_PARAM) in "
                    "cudnnSomething(handle, x) at layers/somewhere.cpp:12"));
      EXPECT_EQ(e.library(), "cuDNN");
      EXPECT_EQ(e.status(), 3);
    }
  }
  LibraryFails in_prepare(true);
  try {
    testing::LayerHarness refused(ctx, in_prepare, {Shape{3, 4}});
    ADD_FAILURE() << "prepare passed";
  } catch (const LibraryError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("lib1 (LibraryFails) prepare, input (3, 4) float32: cuDNN error 3"))
        << e.what();
  }
}

}  // namespace
}  // namespace glassbox
