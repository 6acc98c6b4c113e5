// tensor/cpu_features.h: what the CPU's vector units are, what this build
// compiles for, and which of oneDNN's instruction sets its kernels run: the
// three things that decide which CPU kernels a layer gets (the CPU baseline of
// CMakeLists.txt: x86-64-v3 by default, `native` on request).
#pragma once

#include <string>

namespace glassbox {

// The vector extensions this build's own code is compiled for, from the
// compiler's macros: "AVX2, FMA, F16C" for x86-64-v3, with "AVX-512F, ..."
// added for x86-64-v4 or `native` on an AVX-512 CPU.
std::string cpu_build_simd();

// The vector extensions this CPU has, among those the CPU kernels care about:
// "AVX2, FMA, F16C", then "AVX-512F", "AVX512-BF16", "AMX-BF16" where present.
std::string cpu_simd();

// The instruction set oneDNN's kernels run on this CPU (its effective ISA,
// capped by ONEDNN_MAX_CPU_ISA): "avx2", "avx512_core", "avx512_core_bf16",
// "avx512_core_amx", ...; "" in a build without oneDNN.
std::string onednn_cpu_isa();

// Whether oneDNN runs its AVX-512 kernels here: its brgconv convolutions and
// Winograd kernels exist only for those.
bool onednn_runs_avx512();

// One line for results and reports: "build AVX2, FMA, F16C; CPU AVX2, FMA,
// F16C, AVX-512F; oneDNN avx512_core".
std::string cpu_simd_description();

}  // namespace glassbox
