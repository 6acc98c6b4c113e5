// tests/fuzz/fuzz_parse.cpp: the parsers of single user-typed values:
// parse_int and parse_number (tensor/parse.h) over several ranges,
// Device::parse, parse_precision and choose_device (tensor/context.h),
// find_net (nets/registry.h), and two of train's: parse_lr_schedule
// (optim/lr_schedule.h) and parse_on_bad_sample (data/data_spec.h). The whole
// input is the text; every parser sees it, so one corpus serves all of them.
//
// Beyond "no crash, only glassbox::Error", an accepted value must be in its
// range and survive a round trip through its printed form; an accepted
// schedule passes check_lr_schedule and gives a rate in [0, lr0] at every
// step of a run, with or without warm-up.
#include <charconv>
#include <cmath>
#include <limits>

#include "data/data_spec.h"
#include "nets/registry.h"
#include "optim/lr_schedule.h"
#include "tensor/context.h"
#include "tensor/parse.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();
constexpr double kHuge = std::numeric_limits<double>::max();

struct IntRange { int64_t min, max; };
constexpr IntRange kIntRanges[] = {{1, kMaxInt}, {0, 1'000'000}, {kLowest, kHighest}, {-1, 1}, {kHighest, kHighest}};
struct NumberRange { double min, max; };
constexpr NumberRange kNumberRanges[] = {{0.0, 100.0}, {-kHuge, kHuge}, {0.0, 1e6}, {1e-300, 1e-290}};

void fuzz_numbers(std::string_view text) {
  for (const IntRange r : kIntRanges) {
    fuzz::expect_errors([&] {
      const int64_t value = parse_int("--n", text, r.min, r.max);
      FUZZ_CHECK(value >= r.min && value <= r.max);
      FUZZ_CHECK(parse_int("--n", std::to_string(value), r.min, r.max) == value);
    });
  }
  for (const NumberRange r : kNumberRanges) {
    fuzz::expect_errors([&] {
      const double value = parse_number("--x", text, r.min, r.max);
      FUZZ_CHECK(std::isfinite(value) && value >= r.min && value <= r.max);
      char shortest[32];
      const auto [end, error] = std::to_chars(shortest, shortest + sizeof shortest, value);
      FUZZ_CHECK(error == std::errc());
      FUZZ_CHECK(parse_number("--x", std::string_view(shortest, end), r.min, r.max) == value);
    });
  }
}

void fuzz_bytes(std::string_view text) {
  fuzz::expect_errors([&] {
    const int64_t bytes = parse_bytes("--memory-limit", text);
    FUZZ_CHECK(bytes >= 1 && bytes <= (int64_t{1} << 62));
    FUZZ_CHECK(parse_bytes("--memory-limit", std::to_string(bytes)) == bytes);
  });
}

void fuzz_names(std::string_view text) {
  fuzz::expect_errors([&] {
    const Device device = Device::parse(text, "--device");
    FUZZ_CHECK(device.index >= 0);
    FUZZ_CHECK(Device::parse(device.str()) == device);
  });
  // A CPU-only build: "cuda..." must be refused with a ConfigError, not used.
  fuzz::expect_errors([&] { FUZZ_CHECK(!choose_device(text, "--device").device.is_cuda()); });
  fuzz::expect_errors([&] { FUZZ_CHECK(parse_precision(name_of(parse_precision(text))) == parse_precision(text)); });
  fuzz::expect_errors([&] {
    const NetSpec net = find_net(text);
    FUZZ_CHECK(find_net(net.name).name == net.name);
  });
}

void fuzz_train_values(std::string_view text) {
  fuzz::expect_errors([&] {
    LrSchedule schedule = parse_lr_schedule(text, "--schedule");
    check_lr_schedule(schedule);
    const LrSchedule again = parse_lr_schedule(schedule.str(), "--schedule");
    FUZZ_CHECK(again.kind == schedule.kind && again.str() == schedule.str());
    if (schedule.kind == LrSchedule::Kind::kStep) {
      FUZZ_CHECK(again.step_epochs == schedule.step_epochs && again.gamma == schedule.gamma);
    }
    constexpr int64_t kTotal = 40, kPerEpoch = 3;
    for (const int64_t warmup : {int64_t{0}, int64_t{7}}) {
      schedule.warmup_steps = warmup;
      for (int64_t step = 0; step < kTotal; ++step) {
        const float lr = schedule.at(0.5f, step, kTotal, kPerEpoch);
        FUZZ_CHECK(std::isfinite(lr) && lr >= 0.0f && lr <= 0.5f);
      }
    }
  });
  fuzz::expect_errors([&] {
    const OnBadSample choice = parse_on_bad_sample("--on-bad-sample", text);
    FUZZ_CHECK(text == (choice == OnBadSample::kSkip ? "skip" : "stop"));
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_numbers(text);
  fuzz_bytes(text);
  fuzz_names(text);
  fuzz_train_values(text);
  return 0;
}
