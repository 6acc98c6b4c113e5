// bench/support/sgemm_reference_cuda.cpp: cuBLAS SGEMM in the context's math
// mode (fp32: TF32 off, the FMA peak; tf32: tensor cores), timed with CUDA events.
#include <vector>

#include "bench/support/sgemm_reference.h"
#include "tensor/context_cuda.h"
#include "tensor/copy.h"
#include "tensor/event_timer.h"

namespace glassbox::bench {

void sgemm_cublas(benchmark::State& state, int n, Precision precision) {
  Context ctx = Context::cuda(0);
  ctx.set_precision(precision);
  const Shape shape{n, n};
  Tensor a = ctx.allocate(shape, DType::kFloat32, MemoryCategory::kData);
  Tensor b = ctx.allocate(shape, DType::kFloat32, MemoryCategory::kData);
  Tensor c = ctx.allocate(shape, DType::kFloat32, MemoryCategory::kData);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  from_vector<float>(ctx, values, a);
  from_vector<float>(ctx, values, b);
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    CUBLAS_CHECK(cublasSgemm(cublas_of(ctx), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data<float>(), n,
                             b.data<float>(), n, &zero, c.data<float>(), n));
  };
  gemm();  // warm-up: cuBLAS picks its kernel and sets up its workspace
  EventTimer timer(ctx, 2);
  double seconds = 0.0;
  for (auto _ : state) {
    timer.record(0);
    gemm();
    timer.record(1);
    const double elapsed = timer.elapsed_ms(0, 1) / 1e3;
    state.SetIterationTime(elapsed);
    seconds += elapsed;
  }
  const double flops = 2.0 * n * n * static_cast<double>(n) * static_cast<double>(state.iterations());
  state.counters["TFLOP/s"] = flops / seconds / 1e12;
}

}  // namespace glassbox::bench
