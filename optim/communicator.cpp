// optim/communicator.cpp: where this process stands in its job (from the
// launcher's environment), the communicator of a job of one, and the choice of
// backend. No MPI or CUDA header: those live in optim/communicator_mpi.cpp and
// optim/communicator_nccl_cuda.cpp, reached through optim/communicator_backends.h.
#include "optim/communicator.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "optim/communicator_backends.h"

namespace glassbox {
namespace {

using communicator_backends::EnvironmentReader;

// A variable of the launcher's environment as an integer in [low, high], or
// nullopt when it is not set. Anything else (empty, not a number, trailing
// characters, out of range) is a ConfigError naming the variable: a job whose
// ranks disagree on where they stand would hang, not fail.
std::optional<int> read_int(const EnvironmentReader& env, const char* name, long low, long high,
                            std::string_view meaning) {
  const char* text = env(name);
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  const bool overflow = errno == ERANGE;
  const bool digits_only = *text >= '0' && *text <= '9' && *end == '\0';  // strtol skips spaces, takes signs
  if (!digits_only || overflow || value < low || value > high) {
    throw ConfigError(cat("environment variable ", name, "='", text, "' is not ", meaning,
                          ": expected an integer from ", low, " to ", high,
                          " (set by the launcher, mpirun; unset it to run a job of one)"));
  }
  return static_cast<int>(value);
}

constexpr long kMaxInt = std::numeric_limits<int>::max();

// One launcher's names for rank, size, local rank and local size.
struct LauncherVariables {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};
// OpenMPI's mpirun; then MPICH's Hydra (PMI_*, and MPI_LOCAL* for the
// machine); then a PMIx launcher, which names the rank but not always the size.
constexpr LauncherVariables kLaunchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"PMIX_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A job of one: nothing to average with. Keeps the same checks and the same
// timings as the others, so that a one-process run reports like a job.
class SingleCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string_view backend() const override { return "single"; }

  void begin_step(Context&) override {
    begin_ = std::chrono::steady_clock::now();
    times_.clear();
  }
  void start_average(Context& ctx, const Tensor& data) override {
    communicator_backends::check_reducible(ctx, data, "all-reduce");
    const double now = ms_since(begin_);
    times_.push_back({data.bytes(), now, now});  // the mean over one rank is the data itself
  }
  void progress() override {}
  void wait_all(Context&) override {}
  std::vector<ReductionTime> last_times() override { return times_; }
  void broadcast(Context&, const Tensor&, int root) override {
    communicator_backends::check_root(root, 0, 1, "broadcast");  // the root's data is already here
  }
  std::vector<std::string> all_gather(std::string_view mine) override { return {std::string(mine)}; }

 private:
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
  std::vector<ReductionTime> times_;
};

}  // namespace

namespace communicator_backends {

JobPlacement parse_job_placement(const EnvironmentReader& env) {
  for (const LauncherVariables& names : kLaunchers) {
    const std::optional<int> rank = read_int(env, names.rank, 0, kMaxInt - 1, "a rank");
    if (!rank) continue;
    const std::optional<int> size = read_int(env, names.size, 1, kMaxInt, "a job size");
    if (!size) {
      throw ConfigError(cat("environment variable ", names.rank, " is set (", *rank, ") but ", names.size,
                            " is not: cannot tell how many ranks this job has"));
    }
    if (*rank >= *size) {
      throw ConfigError(cat("environment variable ", names.rank, "=", *rank, " is not a rank of a job of ", *size,
                            " (", names.size, ")"));
    }
    JobPlacement placement{.rank = *rank, .size = *size, .launched_by_mpi = true};
    // Without the machine's share, assume one machine (local = world).
    const std::optional<int> local_size = read_int(env, names.local_size, 1, *size, "a local job size");
    placement.local_size = local_size.value_or(*size);
    const std::optional<int> local_rank =
        read_int(env, names.local_rank, 0, placement.local_size - 1, "a local rank");
    if (local_size && !local_rank) {
      throw ConfigError(cat("environment variable ", names.local_size, " is set (", *local_size, ") but ",
                            names.local_rank, " is not: cannot tell which device is this rank's"));
    }
    placement.local_rank = local_rank.value_or(*rank);
    return placement;
  }
  return {};
}

void check_reducible(const Context& ctx, const Tensor& data, std::string_view operation) {
  if (data.dtype() != DType::kFloat32) {
    throw ConfigError(cat(operation, ": averages float32 data, not ", name_of(data.dtype()), " (", data.numel(),
                          " elements)"));
  }
  if (data.device() != ctx.device()) {
    throw ConfigError(cat(operation, ": the data is on ", data.device().str(), ", the context on ",
                          ctx.device().str()));
  }
}

void check_root(int root, int rank, int size, std::string_view operation) {
  if (root < 0 || root >= size) {
    throw ConfigError(cat("rank ", rank, " of ", size, ": ", operation, " from root ", root,
                          ", which is not a rank of this job"));
  }
}

[[noreturn]] void throw_built_without_mpi(int size) {
  throw ConfigError(cat("this job has ", size, " ranks (mpirun), but Glassbox was built without MPI; "
                        "install libopenmpi-dev and rebuild"));
}

}  // namespace communicator_backends

JobPlacement job_placement() {
  static const JobPlacement placement =
      communicator_backends::parse_job_placement([](const char* name) { return std::getenv(name); });
  return placement;
}

// Note [One CPU rank needs no MPI]: a CPU process that mpirun launched alone
// gets the SingleCommunicator, not MPI's: the mean over one rank is the data
// itself, so MPI would add its start-up (and, under mpirun, its spinning
// progress engine) for nothing, and a build without MPI runs the same
// command. abort_job still ends the job through MPI_Abort whenever something
// else in the process initialised MPI.
std::unique_ptr<Communicator> make_communicator(Context& ctx, const CommunicatorOptions& options) {
  if (!(options.timeout_seconds > 0.0)) {
    throw ConfigError(cat("communicator timeout must be positive seconds, not ", options.timeout_seconds));
  }
  const JobPlacement placement = job_placement();
  ctx.set_replica({.index = placement.rank, .count = placement.size});
  if (ctx.is_cuda()) return communicator_backends::make_nccl(ctx, placement, options);
  if (placement.size == 1) return std::make_unique<SingleCommunicator>();
  if (!communicator_backends::kBuiltWithMpi) communicator_backends::throw_built_without_mpi(placement.size);
  return communicator_backends::make_mpi(placement, options);
}

void abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (communicator_backends::mpi_active()) communicator_backends::mpi_abort(code);
  std::exit(code);
}

// ---- What a build without MPI, or without CUDA, links instead ----------------
namespace communicator_backends {
#if !GLASSBOX_WITH_MPI
void ensure_mpi(const JobPlacement& placement) { throw_built_without_mpi(placement.size); }
bool mpi_active() { return false; }
void mpi_abort(int code) { std::exit(code); }
void broadcast_bytes(int, std::span<std::byte>) { throw_built_without_mpi(job_placement().size); }
std::unique_ptr<Communicator> make_mpi(const JobPlacement& placement, const CommunicatorOptions&) {
  throw_built_without_mpi(placement.size);
}
#endif
#if !GLASSBOX_WITH_CUDA
std::unique_ptr<Communicator> make_nccl(Context&, const JobPlacement&, const CommunicatorOptions&) {
  throw NotBuiltError("NCCL communicator: Glassbox was built without CUDA (configure with -DGLASSBOX_CUDA=ON)");
}
#endif
}  // namespace communicator_backends

}  // namespace glassbox
