// tensor/cpu_features.cpp: the CPU's vector units, the build's and oneDNN's.
#include "tensor/cpu_features.h"

#include <utility>

#if defined(__x86_64__)
#include <cpuid.h>  // __get_cpuid, __get_cpuid_count, bit_F16C, bit_AVX512BF16
#endif

#if GLASSBOX_WITH_ONEDNN
#include "oneapi/dnnl/dnnl.h"  // dnnl_get_effective_cpu_isa
#endif

namespace glassbox {
namespace {

void append(std::string& list, const char* name) {
  if (!list.empty()) list += ", ";
  list += name;
}

}  // namespace

std::string cpu_build_simd() {
  std::string out;
#if defined(__AVX2__)
  append(out, "AVX2");
#elif defined(__AVX__)
  append(out, "AVX");
#elif defined(__SSE4_2__)
  append(out, "SSE4.2");
#else
  append(out, "SSE2");
#endif
#if defined(__FMA__)
  append(out, "FMA");
#endif
#if defined(__F16C__)
  append(out, "F16C");
#endif
#if defined(__AVX512F__)
  append(out, "AVX-512F");
#endif
#if defined(__AVX512BF16__)
  append(out, "AVX512-BF16");
#endif
  return out;
}

std::string cpu_simd() {
  std::string out;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    append(out, "AVX2");
  } else if (__builtin_cpu_supports("avx")) {
    append(out, "AVX");
  } else {
    append(out, "SSE2");
  }
  if (__builtin_cpu_supports("fma")) append(out, "FMA");
  // F16C, AVX512-BF16 and AMX have no names in GCC 12's
  // __builtin_cpu_supports: cpuid's bits (cpuid.h names them).
  constexpr unsigned kAmxBf16 = 1u << 22;  // leaf 7.0, edx: GCC and Clang name it differently
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C)) append(out, "F16C");
  if (__builtin_cpu_supports("avx512f")) append(out, "AVX-512F");
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & bit_AVX512BF16)) append(out, "AVX512-BF16");
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & kAmxBf16)) append(out, "AMX-BF16");
#else
  out = "not x86-64";
#endif
  return out;
}

std::string onednn_cpu_isa() {
#if GLASSBOX_WITH_ONEDNN
  static constexpr std::pair<dnnl_cpu_isa_t, const char*> kNames[] = {
      {dnnl_cpu_isa_sse41, "sse41"},
      {dnnl_cpu_isa_avx, "avx"},
      {dnnl_cpu_isa_avx2, "avx2"},
      {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
      {dnnl_cpu_isa_avx512_mic, "avx512_mic"},
      {dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops"},
      {dnnl_cpu_isa_avx512_core, "avx512_core"},
      {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
      {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
      {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
  };
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  for (const auto& [value, name] : kNames) {
    if (value == isa) return name;
  }
  return "isa " + std::to_string(static_cast<int>(isa));
#else
  return "";
#endif
}

bool onednn_runs_avx512() { return onednn_cpu_isa().starts_with("avx512_core"); }

std::string cpu_simd_description() {
  std::string out = "build " + cpu_build_simd() + "; CPU " + cpu_simd();
  if (const std::string isa = onednn_cpu_isa(); !isa.empty()) out += "; oneDNN " + isa;
  return out;
}

}  // namespace glassbox
