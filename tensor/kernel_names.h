// tensor/kernel_names.h: reading GPU kernel names: a short form for tables,
// and the family a kernel belongs to, both from the demangled name alone.
//
// The names are what cuDNN, cuBLAS, CUTLASS and hand-written kernels are
// called; which of them a step runs depends on the GPU, the library versions
// and the shapes. The rules below are patterns over those names, nothing more:
// a kernel the rules do not know is "other", never guessed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace glassbox {

// "void cudnn::cnn::conv2d_grouped_direct_kernel<float, ...>(cudnnTensorStruct, float const*, ...)"
//   -> "cudnn::cnn::conv2d_grouped_direct_kernel"
// Drops a leading "void ", every template argument list and the parameter
// list; "(anonymous namespace)::" reads "anon::". Past `max_chars`, leading
// namespaces go first ("cnn::conv2d_grouped_direct_kernel"), then the end is
// cut with "...". Names without templates or parameters (extern "C" kernels,
// "ampere_sgemm_128x64_nn", "memcpy HtoD") are only capped. A CUTLASS
// wrapper ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_..._align4>(...)")
// is named by its first template argument ("cutlass_80_tensorop_s1688gemm_..._align4").
std::string short_kernel_name(std::string_view demangled, size_t max_chars = 60);

// What a kernel does, by its name (kernel_family's rules, first match wins):
enum class KernelFamily {
  kCopy,              // memcpy, memset, layout conversions: "memcpy HtoD", "nchwToNhwcKernel", "copy_kernel"
  kOptimizer,         // "sgd_momentum_kernel" (optim/sgd.cu), "adam", "multi_tensor_apply"
  kConvWinograd,      // "cudnn::winograd_nonfused::winogradForwardData4x4", "winograd"
  kConvFft,           // "fft2d_r2c_32x32", "flip_filter" with fft, "regular_fft", "vector_fft"
  kConvImplicitGemm,  // "sm90_xmma_fprop_implicit_gemm_...", "implicit_convolve_sgemm",
                      // "ampere_scudnn_128x64_relu_interior_nn_v1", "precomputed_convolve_sgemm"
  kConvDirect,        // "cudnn::cnn::conv2d_grouped_direct_kernel": "direct" with "conv"
  kConvOther,         // other convolution kernels: "conv", "dgrad", "wgrad", "fprop" ("wgrad_alg0_engine")
  kBatchNorm,         // "cudnn::bn_fw_tr_1C11_kernel_NCHW", "bn_bw_1C11_kernel_new", "batchnorm", "batch_norm"
  kPooling,           // "cudnn::pooling_fw_4d_kernel", "max_pool2d": "pool"
  kSoftmax,           // "softmax_xent_loss_kernel" (layers/softmax_xent.cu), "softmax_fw_kernel"
  kGemm,              // "ampere_sgemm_128x64_nn", "sm90_xmma_gemm_...", "cutlass::Kernel<...Gemm...>",
                      // "gemv2T_kernel", "cublasLt::splitKreduce_kernel", cuBLAS's generated
                      // "nvjet_..." GEMMs: "gemm", "gemv", "cutlass", "cublas", "nvjet"
  kReduction,         // "at::native::reduce_kernel", "cub::DeviceReduceKernel": "reduce", "reduction"
  kElementwise,       // "at::native::vectorized_elementwise_kernel", "op_generic_tensor_kernel",
                      // "scalePackedTensor_kernel", "relu", "fill", "axpy", "dropout", "bias"
  kOther,             // none of the above
};
inline constexpr int kKernelFamilies = static_cast<int>(KernelFamily::kOther) + 1;

KernelFamily kernel_family(std::string_view demangled);
// "copy/memset", "optimizer", "conv Winograd", "conv FFT", "conv implicit GEMM",
// "conv direct", "conv other", "batch norm", "pooling", "softmax", "GEMM",
// "reduction", "elementwise", "other".
std::string_view name_of(KernelFamily family);

}  // namespace glassbox
