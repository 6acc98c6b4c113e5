// tests/test_kernel_map.cpp: short kernel names, kernel families and the
// kernel-to-layer map (graph/kernel_map.h), on hand-made records.
//
// The kernel names below are written the way cuDNN, cuBLAS, CUTLASS and
// PyTorch name their kernels; they are inputs for the classifier, not facts
// about which kernels a Glassbox step runs (that depends on the GPU, the
// library versions and the shapes).
// The collector itself (tensor/kernel_trace.h) needs a GPU: its test skips
// without one.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/kernel_map.h"
#include "tensor/context.h"
#include "tensor/copy.h"
#include "tensor/error.h"
#include "tensor/kernel_names.h"
#include "tensor/kernel_trace.h"
#include "tests/support/command.h"
#include "tests/support/devices.h"
#include "tests/support/fusion_runs.h"
#include "tests/support/temp_dir.h"
#include "tests/support/strings.h"
#include "tools/cli/kernels_json.h"

namespace glassbox {
namespace {

using testing::contains;

constexpr const char* kDirect =
    "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float, float, float, float, "
    "float, float>(cudnnTensorStruct, float const*, cudnnFilterStruct, float const*, cudnnConvolutionStruct, "
    "cudnnTensorStruct, float*, float, float, cudnn::reduced_divisor, int)";
constexpr const char* kXmma =
    "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cudnn";
constexpr const char* kWinograd =
    "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::"
    "WinogradDataParams<float, float>)";
constexpr const char* kSgemm = "ampere_sgemm_128x64_nn";
constexpr const char* kBatchNorm =
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, float const*, "
    "cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, "
    "float)";
constexpr const char* kElementwise =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
    "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";
constexpr const char* kFft = "void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int)";
constexpr const char* kPool =
    "void cudnn::pooling_fw_4d_kernel<float, float, cudnn::maxpooling_func<float, (cudnnNanPropagation_t)0>, "
    "(cudnnPoolingMode_t)0, false>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, cudnnPoolingStruct, "
    "float, float, int, cudnn::reduced_divisor, cudnn::reduced_divisor)";
constexpr const char* kReduce =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, ...>)";
constexpr const char* kCutlassGemm =
    "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_"
    "128x128_16x4_nn_align4::Params)";
constexpr const char* kCutlassConv =
    "void cutlass::Kernel<cutlass::conv::kernel::ImplicitGemmConvolution<...> >(cutlass::conv::kernel::"
    "ImplicitGemmConvolution<...>::Params)";

TEST(ShortKernelName, DropsTemplateArgumentsParametersAndTheReturnType) {
  EXPECT_EQ(short_kernel_name(kDirect), "cudnn::cnn::conv2d_grouped_direct_kernel");
  EXPECT_EQ(short_kernel_name(kWinograd), "cudnn::winograd_nonfused::winogradForwardData4x4");
  EXPECT_EQ(short_kernel_name(kBatchNorm), "cudnn::bn_fw_tr_1C11_kernel_NCHW");
  EXPECT_EQ(short_kernel_name(kElementwise), "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(short_kernel_name(kReduce), "at::native::reduce_kernel");  // a lambda inside the arguments
  EXPECT_EQ(short_kernel_name("void (anonymous namespace)::scale_kernel<float>(float*, int)"), "anon::scale_kernel");
}

TEST(ShortKernelName, ACutlassWrapperIsNamedByItsFirstTemplateArgument) {
  EXPECT_EQ(short_kernel_name(kCutlassGemm), "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4");
  EXPECT_EQ(short_kernel_name(kCutlassConv), "cutlass::conv::kernel::ImplicitGemmConvolution");
  EXPECT_EQ(short_kernel_name("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<A, B>, 3>(P)"),
            "cutlass::gemm::kernel::GemmUniversal");
  EXPECT_EQ(short_kernel_name("void cutlass::Kernel<>(P)"), "cutlass::Kernel");  // nothing to name it by
  // Other templates keep their own name.
  EXPECT_EQ(short_kernel_name("void other::Kernel2<cutlass_80_x>(P)"), "other::Kernel2");
}

TEST(ShortKernelName, PlainNamesAreOnlyCapped) {
  EXPECT_EQ(short_kernel_name(kSgemm), kSgemm);
  EXPECT_EQ(short_kernel_name("memcpy HtoD"), "memcpy HtoD");
  EXPECT_EQ(short_kernel_name("sgd_momentum_kernel"), "sgd_momentum_kernel");
  const std::string xmma = short_kernel_name(kXmma);
  EXPECT_EQ(xmma.size(), 60u);
  EXPECT_TRUE(xmma.starts_with("sm90_xmma_fprop_implicit_gemm_f32f32")) << xmma;
  EXPECT_TRUE(xmma.ends_with("...")) << xmma;
}

TEST(ShortKernelName, LeadingNamespacesGoFirstWhenTooLong) {
  EXPECT_EQ(short_kernel_name(kDirect, 32), "conv2d_grouped_direct_kernel");  // every namespace gone
  EXPECT_EQ(short_kernel_name(kDirect, 20), "conv2d_grouped_di...");
  EXPECT_EQ(short_kernel_name(kDirect, 40), "cudnn::cnn::conv2d_grouped_direct_kernel");  // 40: fits
  EXPECT_EQ(short_kernel_name(kDirect, 39), "cnn::conv2d_grouped_direct_kernel");
  EXPECT_EQ(short_kernel_name(kDirect, 2), "co");
  EXPECT_EQ(short_kernel_name(""), "");
  EXPECT_EQ(short_kernel_name("<<>>(("), "<<>>((");  // nothing left: the name as given
}

TEST(KernelFamily, ClassifiesLibraryKernelNames) {
  EXPECT_EQ(kernel_family(kDirect), KernelFamily::kConvDirect);
  EXPECT_EQ(kernel_family(kXmma), KernelFamily::kConvImplicitGemm);
  EXPECT_EQ(kernel_family("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>"
                          "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
                          "unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)"),
            KernelFamily::kConvImplicitGemm);
  EXPECT_EQ(kernel_family("ampere_scudnn_128x64_relu_interior_nn_v1"), KernelFamily::kConvImplicitGemm);
  EXPECT_EQ(kernel_family(kWinograd), KernelFamily::kConvWinograd);
  EXPECT_EQ(kernel_family(kFft), KernelFamily::kConvFft);
  EXPECT_EQ(kernel_family("void cudnn::cnn::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, "
                          "int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, "
                          "int, float, int, int, int, int)"),
            KernelFamily::kConvOther);
  EXPECT_EQ(kernel_family(kBatchNorm), KernelFamily::kBatchNorm);
  EXPECT_EQ(kernel_family("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, "
                          "float, float, cudnnTensorStruct, float const*)"),
            KernelFamily::kBatchNorm);
  EXPECT_EQ(kernel_family(kPool), KernelFamily::kPooling);
  EXPECT_EQ(kernel_family(kSgemm), KernelFamily::kGemm);
  EXPECT_EQ(kernel_family("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
                          "segment_k_off_kernel__5x_cublas"),
            KernelFamily::kGemm);
  EXPECT_EQ(kernel_family("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, "
                          "false, cublasGemvParamsEx<int, cublasGemvTensorStrided<float const>, "
                          "cublasGemvTensorStrided<float const>, cublasGemvTensorStrided<float>, float> >"
                          "(cublasGemvParamsEx<...>, float, float)"),
            KernelFamily::kGemm);
  EXPECT_EQ(kernel_family("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, "
                          "false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*)"),
            KernelFamily::kGemm);  // the reduction of a split-K GEMM belongs to the GEMM
  EXPECT_EQ(kernel_family("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT"), KernelFamily::kGemm);
  EXPECT_EQ(kernel_family(kCutlassGemm), KernelFamily::kGemm);
  EXPECT_EQ(kernel_family(kCutlassConv), KernelFamily::kConvImplicitGemm);
  EXPECT_EQ(kernel_family(kElementwise), KernelFamily::kElementwise);
  EXPECT_EQ(kernel_family("void cudnn::ops::scalePackedTensor_kernel<float, float>(cudnnTensor4dStruct, float*, "
                          "float)"),
            KernelFamily::kElementwise);
  EXPECT_EQ(kernel_family("void op_generic_tensor_kernel<2, float, float, float, 256, (cudnnGenericOp_t)0, "
                          "(cudnnNanPropagation_t)0, (cudnnDimOrder_t)0, 1>(cudnnTensorStruct, float*, "
                          "cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, float, float, float, "
                          "float, dimArray, reducedDivisorArray, bool)"),
            KernelFamily::kElementwise);
  // Glassbox's own element-wise kernels and bias add (layers/relu.cu).
  EXPECT_EQ(kernel_family("void glassbox::(anonymous namespace)::elementwise_packed_kernel<glassbox::(anonymous "
                          "namespace)::BFloat16, glassbox::(anonymous namespace)::ReluBackward<false> >(uint4 "
                          "const*, uint4 const*, uint4*, long)"),
            KernelFamily::kElementwise);
  EXPECT_EQ(kernel_family("void glassbox::(anonymous namespace)::elementwise_each_kernel<glassbox::(anonymous "
                          "namespace)::Float16, glassbox::(anonymous namespace)::AddRelu>(__half const*, __half "
                          "const*, __half*, long)"),
            KernelFamily::kElementwise);
  EXPECT_EQ(kernel_family("void glassbox::(anonymous namespace)::bias_add_packed_kernel<glassbox::(anonymous "
                          "namespace)::BFloat16, true>(uint4*, __nv_bfloat16 const*, long, long, long)"),
            KernelFamily::kElementwise);
  EXPECT_EQ(kernel_family(kReduce), KernelFamily::kReduction);
  EXPECT_EQ(kernel_family("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>"
                          "(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)"),
            KernelFamily::kCopy);
  EXPECT_EQ(kernel_family("memcpy DtoD"), KernelFamily::kCopy);
  EXPECT_EQ(kernel_family("void cudnn::cnn::convertTensor_kernel<float>(float*)"), KernelFamily::kOther);
  EXPECT_EQ(kernel_family("my_unknown_kernel"), KernelFamily::kOther);
}

// Glassbox's own kernels (optim/sgd.cu, layers/softmax_xent.cu).
TEST(KernelFamily, ClassifiesGlassboxKernels) {
  EXPECT_EQ(kernel_family("glassbox::(anonymous namespace)::sgd_momentum_kernel(float*, float*, float const*, long, "
                          "float, float, float, bool)"),
            KernelFamily::kOptimizer);
  EXPECT_EQ(kernel_family("void glassbox::softmax_xent_loss_kernel(float const*, int const*, float*, int, int)"),
            KernelFamily::kSoftmax);
  EXPECT_EQ(kernel_family("void glassbox::softmax_xent_grad_kernel(float const*, int const*, float*, int, int)"),
            KernelFamily::kSoftmax);
}

TEST(KernelFamily, EveryFamilyHasAName) {
  for (int f = 0; f < kKernelFamilies; ++f) EXPECT_FALSE(name_of(static_cast<KernelFamily>(f)).empty());
  EXPECT_EQ(name_of(KernelFamily::kConvImplicitGemm), "conv implicit GEMM");
  EXPECT_EQ(name_of(KernelRecordKind::kMemcpy), "memcpy");
}

TEST(Demangle, DemanglesCppNamesAndKeepsOthers) {
  EXPECT_EQ(demangle("_Z9my_kernelPfi"), "my_kernel(float*, int)");
  EXPECT_EQ(demangle("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");  // extern "C"
  EXPECT_EQ(demangle(nullptr), "");
}

KernelRecord record(const char* name, uint64_t start_ns, uint64_t end_ns, uint64_t span,
                    KernelRecordKind kind = KernelRecordKind::kKernel) {
  return {.kind = kind, .name = name, .start_ns = start_ns, .end_ns = end_ns, .span = span};
}

std::vector<SpanTime> three_spans() {
  return {{.id = 0, .node = 1, .name = "conv1", .pass = Pass::kForward, .duration_ms = 0.5},
          {.id = 1, .node = 1, .name = "conv1", .pass = Pass::kBackwardData, .duration_ms = 0.5},
          {.id = 2, .node = -1, .name = "sgd", .pass = Pass::kOptimizer, .duration_ms = 0.1}};
}

TEST(KernelMap, GroupsRecordsBySpanAndShortName) {
  const std::vector<KernelRecord> records = {
      record("memset", 0, 100'000, kNoSpan, KernelRecordKind::kMemset),        // zeroing, outside spans
      record(kXmma, 100'000, 400'000, 0),                                      // 0.3 ms
      record(kElementwise, 400'000, 500'000, 0),                               // 0.1 ms
      record(kXmma, 500'000, 700'000, 0),                                      // 0.2 ms, same short name
      record(kDirect, 700'000, 900'000, 1),                                    // 0.2 ms
      record("sgd_momentum_kernel", 900'000, 1'000'000, 2),                    // 0.1 ms
      record("memcpy DtoH", 1'000'000, 1'000'000, kNoSpan, KernelRecordKind::kMemcpy),  // zero length
      record("stray", 0, 0, 17),                                               // an id no span has
  };
  const KernelMap map = map_kernels(three_spans(), records);
  EXPECT_EQ(map.records, 8);
  EXPECT_EQ(map.attributed_records, 5);
  EXPECT_NEAR(map.gpu_ms, 1.0, 1e-12);
  EXPECT_NEAR(map.attributed_ms, 0.9, 1e-12);
  EXPECT_NEAR(map.unattributed_ms, 0.1, 1e-12);
  EXPECT_NEAR(map.coverage, 0.9, 1e-12);

  ASSERT_EQ(map.spans.size(), 3u);
  const SpanKernels& forward = map.spans[0];
  EXPECT_EQ(forward.name, "conv1");
  EXPECT_EQ(forward.pass, Pass::kForward);
  EXPECT_EQ(forward.count, 3);
  EXPECT_NEAR(forward.gpu_ms, 0.6, 1e-12);
  EXPECT_NEAR(forward.share, 0.6, 1e-12);
  ASSERT_EQ(forward.kernels.size(), 2u);
  EXPECT_EQ(forward.kernels[0].count, 2);
  EXPECT_NEAR(forward.kernels[0].gpu_ms, 0.5, 1e-12);
  EXPECT_EQ(forward.kernels[0].family, KernelFamily::kConvImplicitGemm);
  EXPECT_EQ(forward.kernels[0].full_name, kXmma);
  EXPECT_EQ(forward.kernels[1].name, "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(map.spans[1].kernels.at(0).family, KernelFamily::kConvDirect);
  EXPECT_EQ(map.spans[2].kernels.at(0).family, KernelFamily::kOptimizer);

  ASSERT_EQ(map.unattributed.size(), 3u);  // memset, memcpy DtoH, stray
  EXPECT_EQ(map.unattributed[0].name, "memset");
  EXPECT_EQ(map.unattributed[0].family, KernelFamily::kCopy);
  EXPECT_NEAR(map.unattributed[0].share, 0.1, 1e-12);
  EXPECT_EQ(map.unattributed[1].family, KernelFamily::kCopy);  // by its kind, whatever its name

  // Families, most time first: implicit GEMM 0.5, then 0.2 direct, then the 0.1s.
  ASSERT_GE(map.families.size(), 2u);
  EXPECT_EQ(map.families[0].family, KernelFamily::kConvImplicitGemm);
  EXPECT_NEAR(map.families[0].share, 0.5, 1e-12);
  EXPECT_EQ(map.families[1].family, KernelFamily::kConvDirect);
  double shares = 0.0;
  int counts = 0;
  for (const FamilyTotal& family : map.families) shares += family.share, counts += family.count;
  EXPECT_NEAR(shares, 1.0, 1e-12);
  EXPECT_EQ(counts, 8);
}

// Two kernels whose short names are one within the 60-character cap (they
// differ in a tile size past it) are two rows, each named as capped.
TEST(KernelMap, KernelsWhoseNamesDifferPastTheCapStayApart) {
  const std::string common = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_warpgroupsize1x1x1_execute_segment_k_off_";
  const std::string tile_128 = common + "tilesize128x128x64_kernel";
  const std::string tile_256 = common + "tilesize256x128x64_kernel";
  ASSERT_EQ(short_kernel_name(tile_128), short_kernel_name(tile_256));
  const KernelMap map = map_kernels(three_spans(), {record(tile_128.c_str(), 0, 100'000, 0),
                                                    record(tile_256.c_str(), 100'000, 300'000, 0),
                                                    record(tile_128.c_str(), 300'000, 400'000, 0)});
  const std::vector<KernelGroup>& kernels = map.spans.at(0).kernels;
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].full_name, tile_128);
  EXPECT_EQ(kernels[0].count, 2);
  EXPECT_EQ(kernels[1].full_name, tile_256);
  EXPECT_EQ(kernels[1].count, 1);
  EXPECT_EQ(kernels[1].name, short_kernel_name(tile_256));
  EXPECT_EQ(kernels[1].key, tile_256);
}

TEST(KernelMap, NoRecordsOrNoSpansIsNotAnError) {
  const KernelMap empty = map_kernels(three_spans(), {});
  EXPECT_EQ(empty.spans.size(), 3u);  // every span listed, each with nothing
  EXPECT_EQ(empty.spans[0].count, 0);
  EXPECT_EQ(empty.coverage, 0.0);
  EXPECT_TRUE(empty.families.empty());
  const KernelMap none = map_kernels({}, {record(kSgemm, 10, 20, 0)});
  EXPECT_EQ(none.attributed_records, 0);
  EXPECT_EQ(none.unattributed.size(), 1u);
  EXPECT_EQ(none.coverage, 0.0);
  // A record that ends before it starts counts as no time.
  const KernelMap backwards = map_kernels(three_spans(), {record(kSgemm, 20, 10, 0)});
  EXPECT_EQ(backwards.gpu_ms, 0.0);
  EXPECT_EQ(backwards.spans[0].count, 1);
}

// conv0 -> bn0 -> relu0, then conv1 -> bn1 -> add(bn1, relu0) -> relu,
// compiled for fp16 training on NHWC values, where a batch norm takes the ReLU
// after it, and bn1 the residual add too, forward and backward (Note [A
// residual add fused into its batch norm]).
Graph residual_block() {
  GraphBuilder g;
  const Value images = g.input("images", {2, 4, 6, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Conv2d::Options same{.out_channels = 8, .kernel = 3, .pad = 1, .bias = false};
  const Value h0 = g.relu(g.batch_norm(g.conv(images, same, "conv0"), {}, "bn0"), "relu0");
  const Value b1 = g.batch_norm(g.conv(h0, same, "conv1"), {}, "bn1");
  const Value h = g.relu(g.add({b1, h0}, "add"), "relu");
  const Value logits = g.linear(g.flatten(g.global_avg_pool(h, "pool"), "flatten"), {.out_features = 3}, "out");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

// The JSON names each span's layer type, and which layer runs a fused pass:
// the ReLU's and the add's spans name the batch norm, whose spans name them.
TEST(KernelsJson, NamesLayerTypesAndWhoRunsEachFusedPass) {
  Context ctx = Context::cpu();
  Graph graph = residual_block();
  graph.compile(ctx, {.precision = Precision::kFp16, .layout = LayoutChoice::kNhwc});
  const int bn1 = testing::node_index(graph, "bn1"), relu = testing::node_index(graph, "relu"), add = testing::node_index(graph, "add");
  const std::vector<SpanTime> spans = {
      {.id = 0, .node = bn1, .name = "bn1", .pass = Pass::kForward, .duration_ms = 0.2},
      {.id = 1, .node = add, .name = "add", .pass = Pass::kForward, .duration_ms = 0.0},
      {.id = 2, .node = relu, .name = "relu", .pass = Pass::kForward, .duration_ms = 0.0},
      {.id = 3, .node = relu, .name = "relu", .pass = Pass::kBackward, .duration_ms = 0.0},
      {.id = 4, .node = bn1, .name = "bn1", .pass = Pass::kBackward, .duration_ms = 0.3},
      {.id = 5, .node = -1, .name = "sgd", .pass = Pass::kOptimizer, .duration_ms = 0.1}};
  const KernelMap map = map_kernels(spans, {record(kBatchNorm, 0, 200'000, 0), record(kBatchNorm, 200'000, 500'000, 4),
                                            record("sgd_momentum_kernel", 500'000, 600'000, 5)});
  const RuntimeInfo info = runtime_info(ctx);
  const nlohmann::json doc = cli::kernels_json(map, graph, info, "Block", 2, 0);
  EXPECT_EQ(doc.at("kind"), "glassbox.kernels");
  EXPECT_EQ(doc.at("records"), 3);
  const nlohmann::json& s = doc.at("spans");
  ASSERT_EQ(s.size(), spans.size());
  EXPECT_EQ(s[0].at("type"), "BatchNorm2d");
  EXPECT_EQ(s[0].at("fused_into"), "");
  EXPECT_EQ(s[0].at("runs"), nlohmann::json::array({"add", "relu"})) << s[0].dump();
  EXPECT_TRUE(contains(s[0].at("precision").get<std::string>(), "fp16")) << s[0].dump();
  EXPECT_EQ(s[0].at("kernels").at(0).at("family"), "batch norm");
  EXPECT_EQ(s[1].at("type"), "Add");
  EXPECT_EQ(s[1].at("fused_into"), "bn1");
  EXPECT_EQ(s[2].at("fused_into"), "bn1");
  EXPECT_EQ(s[3].at("pass"), "backward");
  EXPECT_EQ(s[3].at("fused_into"), "bn1") << "the batch norm takes the ReLU's backward too";
  EXPECT_EQ(s[4].at("runs"), nlohmann::json::array({"add", "relu"})) << s[4].dump();
  EXPECT_EQ(s[5].at("type"), "SGD");
  EXPECT_EQ(s[5].at("runs"), nlohmann::json::array());
  EXPECT_EQ(s[5].at("precision"), "");
  EXPECT_EQ(cli::fused_host(map.spans[2], graph), "bn1");
  EXPECT_EQ(cli::fused_host(map.spans[0], graph), "");

  // The same graph unfused: every layer runs its own passes.
  Graph unfused = residual_block();
  unfused.compile(ctx, {.precision = Precision::kFp16, .layout = LayoutChoice::kNhwc, .fusion = false});
  const nlohmann::json plain = cli::kernels_json(map, unfused, info, "Block", 2, 0);
  for (const nlohmann::json& span : plain.at("spans")) {
    EXPECT_EQ(span.at("fused_into"), "") << span.dump();
    EXPECT_EQ(span.at("runs"), nlohmann::json::array()) << span.dump();
  }
}

TEST(KernelTrace, ACpuContextHasNoKernelsToTrace) {
  const Context ctx = Context::cpu();
  try {
    KernelTrace trace(ctx);
    FAIL() << "KernelTrace on the CPU should throw";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "kernel records come from CUPTI and need a CUDA device")) << e.what();
  }
}

TEST(KernelTrace, RecordsTheKernelsOfASpanOnAGpu) {
  GLASSBOX_REQUIRE_CUDA();
  // A copy inside a span is attributed to it, one outside is not.
  Context ctx = Context::cuda(0);
  KernelTrace trace(ctx);
  const Tensor a = ctx.allocate(Shape{1024}, DType::kFloat32, MemoryCategory::kActivations);
  const Tensor b = ctx.allocate(Shape{1024}, DType::kFloat32, MemoryCategory::kActivations);
  trace.start_step();
  trace.span_begin(7);
  fill_zero(ctx, a);
  trace.span_end(7);
  fill_zero(ctx, b);
  const std::vector<KernelRecord> records = trace.finish_step();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].span, 7u);
  EXPECT_EQ(records[1].span, kNoSpan);
  EXPECT_EQ(trace.dropped(), 0u);
}

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

TEST(CliKernels, OnTheCpuItRefusesAndPointsAtTraceAndTime) {
  const auto r = testing::run_command(kCli + " kernels LeNet --device cpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "glassbox: kernels: needs a CUDA device: kernel records come from CUPTI, and cpu "
                                 "runs no kernels; on the CPU, `glassbox trace LeNet` shows each layer's passes "
                                 "and `glassbox time LeNet` their times"))
      << r.output;
}

TEST(CliKernels, FlagsAreCheckedAndListed) {
  const auto bad = testing::run_command(kCli + " kernels LeNet --warmup -1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.output, "--warmup must be an integer from 0 to 1000000, got '-1'")) << bad.output;
  const auto steps = testing::run_command(kCli + " kernels LeNet --steps 3");
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_TRUE(contains(steps.output, "unknown flag '--steps' for 'kernels'")) << steps.output;
  const auto help = testing::run_command(kCli + " kernels --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.output, "--json FILE")) << help.output;
  const auto usage = testing::run_command(kCli + " --help");
  EXPECT_TRUE(contains(usage.output, "kernels NET [--batch N] [--device cuda|cuda:N]")) << usage.output;
}

TEST(CliKernels, MapsOneStepOnAGpu) {
  GLASSBOX_REQUIRE_CUDA();
  // One LeNet step on a GPU: the map covers its kernels, names a layer and the
  // optimizer, and writes the JSON.
  const testing::TempDir dir;
  const std::string json = dir.path() + "/lenet.kernels.json";
  const auto r = testing::run_command(kCli + " kernels LeNet --batch 8 --warmup 1 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "coverage: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "conv1")) << r.output;
  EXPECT_TRUE(contains(r.output, "sgd")) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + json)) << r.output;
}

// In bf16 each layer says what it computes in: the convolutions in 16 bits,
// the loss staged in fp32 (docs/precision.md).
TEST(CliKernels, NamesEachLayersPrecisionInBf16) {
  GLASSBOX_REQUIRE_CUDA();
  const auto r = testing::run_command(kCli + " kernels LeNet --batch 8 --warmup 1 --precision bf16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"batch 8, bf16 (mixed", "precision", "fp32, staged from bf16", "coverage: "}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

}  // namespace
}  // namespace glassbox
