// tensor/kernel_names.cpp: short kernel names and kernel families, by pattern.
#include "tensor/kernel_names.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace glassbox {
namespace {

bool has(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool has_any(std::string_view text, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view part) { return has(text, part); });
}

// "conv" as in convolution, not "convert".
bool has_conv(std::string_view text) {
  for (size_t at = text.find("conv"); at != std::string_view::npos; at = text.find("conv", at + 1)) {
    if (text.substr(at, 7) != "convert") return true;
  }
  return false;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The name without return type, template arguments or parameters, uncapped.
std::string bare_name(std::string_view name) {
  std::string text(name);
  for (size_t at; (at = text.find("(anonymous namespace)")) != std::string::npos;) {
    text.replace(at, std::string_view("(anonymous namespace)").size(), "anon");
  }
  std::string_view rest(text);
  if (rest.starts_with("void ")) rest.remove_prefix(5);
  std::string out;
  int angles = 0;
  for (char c : rest) {
    if (c == '<') {
      ++angles;
    } else if (c == '>') {
      if (angles > 0) --angles;  // a stray '>' (operator->) is not ours to balance
    } else if (angles == 0) {
      if (c == '(') break;  // the parameter list
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  return out.empty() ? std::string(name) : out;  // "<unnamed>" or a name of symbols only: as given
}

// The first template argument of a name ("A<B<C>, D>(E)" -> "B<C>"), or
// nothing where it has none.
std::string_view first_template_argument(std::string_view name) {
  const size_t open = name.find('<');
  if (open == std::string_view::npos) return {};
  int angles = 0;
  for (size_t i = open + 1; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') {
      ++angles;
    } else if (c == '>' || (c == ',' && angles == 0)) {
      if (angles == 0) return name.substr(open + 1, i - open - 1);
      --angles;
    }
  }
  return {};
}

// CUTLASS launches every kernel through a wrapper template (cutlass::Kernel,
// Kernel2, device_kernel) whose first argument says what it is
// ("cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4"): that argument's
// name stands for the kernel.
std::string named_kernel(std::string_view demangled) {
  std::string name = bare_name(demangled);
  if (name == "cutlass::Kernel" || name == "cutlass::Kernel2" || name == "cutlass::device_kernel") {
    std::string_view argument = first_template_argument(demangled);
    while (!argument.empty() && argument.front() == ' ') argument.remove_prefix(1);
    if (!argument.empty()) return bare_name(argument);
  }
  return name;
}

}  // namespace

std::string short_kernel_name(std::string_view demangled, size_t max_chars) {
  std::string name = named_kernel(demangled);
  while (name.size() > max_chars) {
    const size_t scope = name.find("::");
    if (scope == std::string::npos) break;
    name.erase(0, scope + 2);
  }
  if (name.size() > max_chars) name = max_chars > 3 ? name.substr(0, max_chars - 3) + "..." : name.substr(0, max_chars);
  return name;
}

KernelFamily kernel_family(std::string_view demangled) {
  const std::string n = lower(bare_name(demangled));
  if (n.starts_with("memcpy") || n.starts_with("memset") ||
      has_any(n, {"nchwtonhwc", "nhwctonchw", "copy_kernel", "copykernel"})) {
    return KernelFamily::kCopy;
  }
  if (has_any(n, {"sgd", "adam", "multi_tensor_apply", "optimizer"})) return KernelFamily::kOptimizer;
  if (has(n, "winograd")) return KernelFamily::kConvWinograd;
  if (has(n, "fft")) return KernelFamily::kConvFft;
  if (has_any(n, {"implicit_gemm", "implicitgemm", "implicit_convolve", "precomputed_convolve", "scudnn"})) {
    return KernelFamily::kConvImplicitGemm;
  }
  // CUTLASS names every kernel cutlass::Kernel<...>: what it is lies in the arguments.
  if (has(n, "cutlass")) {
    const std::string full = lower(demangled);
    return has_conv(full) ? KernelFamily::kConvImplicitGemm : KernelFamily::kGemm;
  }
  if (has(n, "direct") && has_conv(n)) return KernelFamily::kConvDirect;
  if (has_conv(n) || has_any(n, {"dgrad", "wgrad", "fprop"})) return KernelFamily::kConvOther;
  if (has_any(n, {"bn_fw", "bn_bw", "batchnorm", "batch_norm"})) return KernelFamily::kBatchNorm;
  if (has(n, "pool")) return KernelFamily::kPooling;
  if (has(n, "softmax")) return KernelFamily::kSoftmax;
  if (has_any(n, {"gemm", "gemv", "cublas", "nvjet"})) return KernelFamily::kGemm;
  if (has_any(n, {"reduce", "reduction"})) return KernelFamily::kReduction;
  if (has_any(n, {"elementwise", "op_generic_tensor", "optensor", "scalepackedtensor", "relu", "fill", "axpy",
                  "dropout", "bias", "activation"})) {
    return KernelFamily::kElementwise;
  }
  return KernelFamily::kOther;
}

std::string_view name_of(KernelFamily family) {
  switch (family) {
    case KernelFamily::kCopy: return "copy/memset";
    case KernelFamily::kOptimizer: return "optimizer";
    case KernelFamily::kConvWinograd: return "conv Winograd";
    case KernelFamily::kConvFft: return "conv FFT";
    case KernelFamily::kConvImplicitGemm: return "conv implicit GEMM";
    case KernelFamily::kConvDirect: return "conv direct";
    case KernelFamily::kConvOther: return "conv other";
    case KernelFamily::kBatchNorm: return "batch norm";
    case KernelFamily::kPooling: return "pooling";
    case KernelFamily::kSoftmax: return "softmax";
    case KernelFamily::kGemm: return "GEMM";
    case KernelFamily::kReduction: return "reduction";
    case KernelFamily::kElementwise: return "elementwise";
    case KernelFamily::kOther: return "other";
  }
  return "other";
}

}  // namespace glassbox
