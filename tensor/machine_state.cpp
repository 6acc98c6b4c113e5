// tensor/machine_state.cpp: the CPU readings, and the fields of a report.
#include "tensor/machine_state.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "tensor/error.h"

namespace glassbox {
namespace {

constexpr const char* kRaplEnergy = "/sys/class/powercap/intel-rapl:0/energy_uj";
constexpr const char* kRaplRange = "/sys/class/powercap/intel-rapl:0/max_energy_range_uj";

double mean_cpu_mhz() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  double sum = 0.0;
  int cores = 0;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    try {
      sum += std::stod(line.substr(colon + 1));
      ++cores;
    } catch (const std::exception&) {  // a line we cannot read tells us nothing
    }
  }
  return cores > 0 ? sum / cores : 0.0;
}

std::optional<double> read_microjoules(const char* path) {
  std::ifstream file(path);
  unsigned long long value = 0;
  if (!(file >> value)) return std::nullopt;
  return static_cast<double>(value) * 1e-6;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

std::string describe_gpu(const GpuSample& g) {
  return cat("SM ", g.sm_mhz, " MHz, memory ", g.memory_mhz, " MHz, ", fixed(g.power_w, 1), " W, ", g.temperature_c,
             " C, throttle: ", g.throttle);
}

// The energy between two readings of a counter; nullopt where either is missing.
std::optional<double> joules_between(std::optional<double> start, std::optional<double> end, double wrap) {
  if (!start || !end) return std::nullopt;
  double joules = *end - *start;
  if (joules < 0 && wrap > 0) joules += wrap;  // the counter wrapped once
  if (joules < 0) return std::nullopt;
  return joules;
}

std::string per_image(std::optional<double> joules, int64_t images, double seconds) {
  if (!joules || images <= 0) return "";
  return cat(fixed(*joules / static_cast<double>(images), 4), " J per image (", fixed(*joules, 2), " J over ",
             fixed(seconds, 3), " s, mean ", fixed(seconds > 0 ? *joules / seconds : 0.0, 1), " W)");
}

}  // namespace

std::optional<double> cpu_joules_per_image(const MachineSample& start, const MachineSample& end, int64_t images) {
  const std::optional<double> joules = joules_between(start.cpu_energy_j, end.cpu_energy_j, start.cpu_energy_range_j);
  if (!joules || images <= 0) return std::nullopt;
  return *joules / static_cast<double>(images);
}

std::optional<double> gpu_joules_per_image(const MachineSample& start, const MachineSample& end, int64_t images) {
  if (!start.gpu || !end.gpu || images <= 0) return std::nullopt;
  const std::optional<double> joules = joules_between(start.gpu->energy_j, end.gpu->energy_j, 0.0);
  if (!joules) return std::nullopt;
  return *joules / static_cast<double>(images);
}

std::string throttle_reasons(unsigned long long mask) {
  // nvmlClocksThrottleReasons' bits, as NVML's documentation numbers them.
  static const std::pair<unsigned long long, const char*> kReasons[] = {
      {0x1, "gpu idle"},          {0x2, "applications clocks setting"}, {0x4, "sw power cap"},
      {0x8, "hw slowdown"},       {0x10, "sync boost"},                 {0x20, "sw thermal slowdown"},
      {0x40, "hw thermal slowdown"}, {0x80, "hw power brake slowdown"}, {0x100, "display clock setting"}};
  std::string words;
  unsigned long long known = 0;
  for (const auto& [bit, name] : kReasons) {
    known |= bit;
    if (mask & bit) words += (words.empty() ? "" : ", ") + std::string(name);
  }
  if (mask & ~known) words += cat(words.empty() ? "" : ", ", "other (bits ", mask & ~known, ")");
  return words.empty() ? "none" : words;
}

MachineSample sample_machine(const Context& ctx) {
  MachineSample s;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  s.cpu_mhz = mean_cpu_mhz();
  s.cpu_energy_j = read_microjoules(kRaplEnergy);
  if (s.cpu_energy_j) {
    s.cpu_energy_range_j = read_microjoules(kRaplRange).value_or(0.0);
  } else {
    s.cpu_energy_missing = cat("not available (", kRaplEnergy, " cannot be read here)");
  }
  s.cpu_times = read_cpu_times();
  if (ctx.is_cuda()) s.gpu = cuda_entry::sample_gpu(ctx, s.gpu_missing);
  return s;
}

std::optional<double> others_busy_between(const MachineSample& start, const MachineSample& end) {
  if (!start.cpu_times || !end.cpu_times) return std::nullopt;
  return others_busy_cores(*start.cpu_times, *end.cpu_times);
}

std::vector<std::pair<std::string, std::string>> machine_fields(const MachineSample& start, const MachineSample& end,
                                                                 int64_t images) {
  const double seconds = end.seconds - start.seconds;
  std::vector<std::pair<std::string, std::string>> fields;
  auto mhz = [](double value) { return value > 0 ? cat(fixed(value, 0), " MHz") : std::string("not available"); };
  fields.emplace_back("cpu_mhz", cat(mhz(start.cpu_mhz), " at start, ", mhz(end.cpu_mhz), " at end"));
  const std::optional<double> others = others_busy_between(start, end);
  std::string other_work;
  if (others) {
    other_work = cat(fixed(*others, 2), " cores busy with other processes");
  } else if (!start.cpu_times || !end.cpu_times) {
    other_work = "not available (/proc/stat cannot be read here)";
  } else {
    other_work = cat("not measured: the timed steps took ", fixed(end.cpu_times->wall - start.cpu_times->wall, 3),
                     " s, and /proc/stat's 10 ms ticks need ", fixed(kShortestBusyWindow, 2), " s to tell");
  }
  fields.emplace_back("other_work", other_work);
  const std::string cpu_energy =
      per_image(joules_between(start.cpu_energy_j, end.cpu_energy_j, start.cpu_energy_range_j), images, seconds);
  fields.emplace_back("cpu_energy", !cpu_energy.empty()          ? cpu_energy + ", RAPL package 0"
                                    : start.cpu_energy_missing.empty() ? std::string("not available")
                                                                       : start.cpu_energy_missing);
  if (start.gpu && end.gpu) {
    fields.emplace_back("gpu_start", describe_gpu(*start.gpu));
    fields.emplace_back("gpu_end", describe_gpu(*end.gpu));
    const std::string energy = per_image(joules_between(start.gpu->energy_j, end.gpu->energy_j, 0.0), images, seconds);
    fields.emplace_back("gpu_energy", energy.empty() ? "not available (NVML's energy counter)" : energy + ", NVML");
  } else if (!start.gpu_missing.empty() || !end.gpu_missing.empty()) {
    fields.emplace_back("gpu_state", cat("not available: ", start.gpu_missing.empty() ? end.gpu_missing
                                                                                       : start.gpu_missing));
  }
  return fields;
}

}  // namespace glassbox
