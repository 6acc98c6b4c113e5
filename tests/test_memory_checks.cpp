// tests/test_memory_checks.cpp: a plan that does not fit the machine fails at
// compile, before anything is allocated, with the typed error naming the
// categories and bytes; allocations are checked against what is available
// (and against a limit); a refused larger workspace leaves the one held; CPU
// memory is really there once allocated.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

#include "graph/builder.h"
#include "nets/registry.h"
#include "tensor/host_memory.h"
#include "tests/support/address_space_limit.h"
#include "tests/support/data_files.h"
#include "tests/support/sanitizers.h"

namespace glassbox {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Resident memory of this process, from /proc/self/statm (pages).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Every size an int64 holds reads in a unit that keeps it short: the
// largest --memory-limit, 2^62 bytes, is 4 EiB, not 4194304 TiB.
TEST(FormatBytes, KeepsEverySizeShort) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(int64_t{5} << 30), "5.00 GiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 50), "3.00 PiB");
  EXPECT_EQ(format_bytes(int64_t{1} << 62), "4.00 EiB");
  EXPECT_EQ(format_bytes(std::numeric_limits<int64_t>::max()), "8.00 EiB");
  EXPECT_EQ(format_bytes(-2048), "-2.00 KiB");
}

TEST(MemoryChecks, APlanLargerThanTheMachineFailsAtCompileBeforeAllocating) {
  const AvailableMemory host = host_available_memory();
  ASSERT_LT(host.bytes, int64_t{1} << 50) << "this machine does not say how much memory it has";
  // A LeNet batch whose activations and activation gradients need 1.5x what
  // the machine has, each of the two arenas alone 0.75x: separately, each fits
  // (without memory reuse, so that each arena holds every tensor).
  int64_t activation_bytes = 0;  // per image
  const Graph one = find_net("LeNet").build(1);
  for (const Node& node : one.nodes()) {
    if (!node.is_input()) activation_bytes += node.shape.numel() * 4;
  }
  const int batch = static_cast<int>(std::min<int64_t>(host.bytes * 3 / 4 / activation_bytes, 1 << 30));
  Graph graph = find_net("LeNet").build(batch);
  Context ctx = Context::cpu();
  CompileOptions options;
  options.memory_reuse = MemoryReuse::kOff;
  try {
    graph.compile(ctx, options);
    FAIL() << "compiled a plan larger than the machine (batch " << batch << ")";
  } catch (const OutOfMemoryError& e) {
    const std::string message = e.what();
    for (const char* part : {"cpu: out of memory for the graph's memory plan: ", "(parameters ", "gradients ",
                             "data ", "activations ", "activation gradients ", " available (", "Glassbox holds 0 B"}) {
      EXPECT_TRUE(contains(message, part)) << "missing '" << part << "' in: " << message;
    }
  }
  EXPECT_EQ(ctx.memory().peak_total, 0) << "nothing is allocated before the plan is checked";
  EXPECT_FALSE(graph.compiled());
}

// `ulimit -v` caps what the host can give this process, below MemAvailable:
// the figure a refused allocation names is the room under it.
TEST(MemoryChecks, AnAddressSpaceLimitIsTheHostsRoom) {
  if (testing::kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory";
  AvailableMemory host;
  {
    const testing::AddressSpaceLimit limit(int64_t{200} << 20);
    ASSERT_TRUE(limit.held());
    host = host_available_memory();
  }
  EXPECT_EQ(host.source, "the address-space limit, ulimit -v");
  EXPECT_GT(host.bytes, int64_t{150} << 20);  // what the reading itself mapped comes off the 200 MiB
  EXPECT_LE(host.bytes, int64_t{200} << 20);
  EXPECT_NE(host_available_memory().source, "the address-space limit, ulimit -v") << "the limit is restored";
}

TEST(MemoryChecks, ALimitRefusesAllocationsPastIt) {
  Context ctx = Context::cpu();
  ctx.allocator().set_limit(int64_t{1} << 20);
  const Tensor kept = ctx.allocate(Shape{200'000}, DType::kFloat32, MemoryCategory::kParameters);  // 800 kB
  try {
    ctx.allocate(Shape{100'000}, DType::kFloat32, MemoryCategory::kActivations);  // 400 kB more
    FAIL() << "allocated past the limit";
  } catch (const OutOfMemoryError& e) {
    EXPECT_STREQ(e.what(), "cpu: out of memory allocating 390.62 KiB of activations; 242.75 KiB available (limit "
                           "of 1.00 MiB); Glassbox holds 781.25 KiB (parameters 781.25 KiB)");
  }
  ctx.allocator().set_limit(0);  // no limit: the machine's memory
  EXPECT_NO_THROW(ctx.allocate(Shape{100'000}, DType::kFloat32, MemoryCategory::kActivations));
}

TEST(MemoryChecks, ALimitedDeviceFailsTheCompileNamingTheCategories) {
  Graph graph = find_net("AlexNet").build(2);
  Context ctx = Context::cpu();
  ctx.allocator().set_limit(int64_t{100} << 20);  // 100 MiB: the parameters alone need 233 MiB
  try {
    graph.compile(ctx);
    FAIL() << "AlexNet fit in 100 MiB";
  } catch (const OutOfMemoryError& e) {
    EXPECT_TRUE(contains(e.what(), "cpu: out of memory for the graph's memory plan: ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "(parameters 233.08 MiB, gradients 233.08 MiB, data ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "; 100.00 MiB available (limit of 100.00 MiB); Glassbox holds 0 B")) << e.what();
  }
}

// Note [Workspace grows by allocate, then swap] (tensor/context.cpp).
TEST(MemoryChecks, ARefusedLargerWorkspaceKeepsTheOneHeld) {
  Context ctx = Context::cpu();
  ctx.allocator().set_limit(int64_t{1} << 20);
  ctx.reserve_workspace(size_t{512} << 10);
  auto* held = static_cast<unsigned char*>(ctx.workspace());
  std::fill_n(held, size_t{512} << 10, static_cast<unsigned char>(0x5a));
  try {
    ctx.reserve_workspace(size_t{2} << 20);
    FAIL() << "reserved 2 MiB of workspace under a 1 MiB limit";
  } catch (const OutOfMemoryError& e) {
    EXPECT_STREQ(e.what(), "cpu: out of memory allocating 2.00 MiB of workspace; 512.00 KiB available (limit of "
                           "1.00 MiB); Glassbox holds 512.00 KiB (workspace 512.00 KiB)");
  }
  ASSERT_EQ(ctx.workspace(), held) << "the workspace held was given up";
  EXPECT_EQ(ctx.workspace_bytes(), size_t{512} << 10);
  EXPECT_EQ(ctx.memory().current[static_cast<int>(MemoryCategory::kWorkspace)], int64_t{512} << 10);
  EXPECT_EQ(std::count(held, held + (size_t{512} << 10), 0x5a), int64_t{512} << 10) << "its contents changed";
  held[0] = 1;  // still ours to write
}

// The price of keeping it: while the workspace grows, old and new are held at once.
TEST(MemoryChecks, AGrowingWorkspaceHoldsOldAndNewAtOnce) {
  Context ctx = Context::cpu();
  ctx.reserve_workspace(1000);
  ctx.reserve_workspace(5000);
  const MemoryStats stats = ctx.memory();
  EXPECT_EQ(stats.current[static_cast<int>(MemoryCategory::kWorkspace)], 5000);
  EXPECT_EQ(stats.peak[static_cast<int>(MemoryCategory::kWorkspace)], 6000);
}

// A device that refuses every request and does not say how much it has.
class RefusingAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }

 private:
  void* raw_allocate(size_t) override { return nullptr; }
  void raw_deallocate(void*) noexcept override {}
  DeviceMemory device_memory() const override { return {}; }
};

TEST(MemoryChecks, ARefusedAllocationIsAnOutOfMemoryErrorSayingSo) {
  RefusingAllocator allocator;
  try {
    allocator.allocate(400, MemoryCategory::kData);
    FAIL() << "a refused allocation returned";
  } catch (const OutOfMemoryError& e) {
    EXPECT_STREQ(e.what(), "cpu: out of memory allocating 400 B of data; the device refused it; Glassbox holds 0 B");
  }
  EXPECT_EQ(allocator.stats().peak_total, 0) << "a refused allocation is not counted";
}

// A device that allows no allocation now (as a GPU whose stream is being
// captured) and counts what it is asked.
class ClosedAllocator final : public Allocator {
 public:
  Device device() const override { return Device::cpu(); }
  mutable int memory_asked = 0, allocated = 0;

 private:
  void check_can_allocate(size_t bytes) const override { throw Error(cat("no allocation of ", bytes, " now")); }
  void* raw_allocate(size_t) override {
    ++allocated;
    return nullptr;
  }
  void raw_deallocate(void*) noexcept override {}
  DeviceMemory device_memory() const override {
    ++memory_asked;
    return {};
  }
};

// The refusal comes first: a request large enough to be checked against the
// device's free memory does not ask the device first (a GPU may refuse that
// question during a capture, with its own, vaguer error).
TEST(MemoryChecks, AnAllocatorThatAllowsNoAllocationRefusesBeforeAskingTheDevice) {
  for (const size_t bytes : {size_t{400}, size_t{64} << 20}) {
    ClosedAllocator allocator;
    EXPECT_EQ(testing::message_of<Error>([&] { allocator.allocate(bytes, MemoryCategory::kData); }),
              cat("no allocation of ", bytes, " now"));
    EXPECT_EQ(allocator.memory_asked, 0) << bytes;
    EXPECT_EQ(allocator.allocated, 0) << bytes;
    EXPECT_EQ(allocator.stats().peak_total, 0) << bytes;
  }
}

TEST(MemoryChecks, CpuMemoryIsWrittenWhenAllocated) {
  // Note [First touch]: untouched pages are not memory yet. Allocating 64 MiB
  // (and writing nothing to it) must raise the resident size by about that.
  Context ctx = Context::cpu();
  const int64_t before = resident_bytes();
  const Tensor t = ctx.allocate(Shape{16 << 20}, DType::kFloat32, MemoryCategory::kActivations);
  const int64_t grown = resident_bytes() - before;
  EXPECT_GE(grown, int64_t{60} << 20) << "the pages were not touched: resident size grew by " << grown;
}

}  // namespace
}  // namespace glassbox
