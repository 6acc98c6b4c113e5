// tensor/runtime_info.cpp: the host side of the run context.
#include "tensor/runtime_info.h"

#include <omp.h>

#include <Eigen/Core>
#include <fstream>

#include "tensor/cpu_blas.h"
#include "tensor/cpu_features.h"

#include "glassbox_build_info.h"  // generated: GLASSBOX_COMMIT, GLASSBOX_BUILD

namespace glassbox {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RuntimeInfo::fields() const {
  std::vector<std::pair<std::string, std::string>> out = {
      {"device", device},       {"device_name", device_name}, {"cpu", cpu_model},
      {"cpu_threads", std::to_string(cpu_threads)},          {"cpu_simd", simd},
      {"cpu_blas", blas},       {"cpu_conv", conv},           {"precision", precision},
      {"build", build},
      {"commit", commit}};
  const std::pair<const char*, const std::string*> optional[] = {
      {"gpu_memory", &gpu_memory}, {"driver", &driver}, {"cuda_runtime", &cuda_runtime},
      {"cudnn", &cudnn},           {"cublas", &cublas}, {"nccl", &nccl}};
  for (const auto& [key, value] : optional) {
    if (!value->empty()) out.emplace_back(key, *value);
  }
  return out;
}

RuntimeInfo runtime_info(const Context& ctx) {
  RuntimeInfo info;
  info.device = ctx.device().str();
  info.cpu_model = cpu_model_name();
  info.device_name = info.cpu_model;
  info.cpu_threads = omp_get_max_threads();
  info.simd = cpu_simd_description();
  info.blas = cpu_blas_description();
  info.conv = cpu_conv_description();
  info.precision = std::string(name_of(ctx.precision()));
  info.build = GLASSBOX_BUILD;
  info.commit = GLASSBOX_COMMIT;
  cuda_entry::describe(ctx, info);
  return info;
}

}  // namespace glassbox
