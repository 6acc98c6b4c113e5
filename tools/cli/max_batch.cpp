// tools/cli/max_batch.cpp: `glassbox max-batch NET`: the largest batch whose
// training step fits the device, found by trying.
//
// Each try builds the network at that batch, compiles it on a fresh context,
// adds SGD with momentum and runs one whole training step
// (tools/cli/step_memory.h): a batch fits when all of that succeeds. Batches
// double from 1 until one does not fit, then bisection between the last that
// did and the first that did not. A try that does not fit is an
// OutOfMemoryError (or, past the shapes' limits, a ConfigError), caught and
// reported; anything else stops the search. --memory-limit caps the
// allocator, so the search can be run for a smaller device, and tested.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "tensor/parse.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/memory_report.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/step_memory.h"
#include "tools/entry_point.h"

namespace glassbox::cli {
namespace {

constexpr int kDefaultMax = 65536;

// The first line of an error: enough to say why a try failed.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

int run_max_batch(const std::vector<std::string>& words) {
  const Args args("max-batch", max_batch_flags(), words);
  const NetSpec& net = network_arg(args, "max-batch");
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  if (!choice.note.empty()) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  const CompileOptions options = compile_options_from_flags(args.values());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  const int64_t limit = args.has("--memory-limit") ? parse_bytes("--memory-limit", args.get("--memory-limit", "")) : 0;
  const int max = args.int_in("--max", kDefaultMax, 1, kMaxInt);
  if (!choice.device.is_cuda() && limit == 0) {
    std::fprintf(stderr, "glassbox: on the CPU without --memory-limit, tries grow until the machine's free memory "
                         "runs out, each running a whole training step: this can take long\n");
  }

  // Only a network with convolutions has images to lay out (an MLP's or an
  // LSTM's values have no channels to put last).
  const Graph shapes = build_net(net, 1);
  const bool convolves = std::any_of(shapes.nodes().begin(), shapes.nodes().end(), [](const Node& node) {
    return !node.is_input() && node.layer->type() == "Conv2d";
  });
  const char* layout = !convolves ? ""
                       : plans_channels_last(options.layout, choice.device, options.precision)
                           ? ", values NHWC where the layers take it"
                           : ", values NCHW";
  std::printf("%s on %s, %s%s%s: one training step (SGD with momentum) per try\n", net.name.c_str(),
              choice.device.str().c_str(), std::string(name_of(options.precision)).c_str(), layout,
              limit ? cat(", memory limited to ", format_bytes(limit)).c_str() : "");
  std::optional<StepMemory> best;
  auto fits = [&](int batch) {
    try {
      StepMemory step = measure_train_step(net, batch, choice.device, options, limit);
      std::printf("  batch %d: fits, peak %s\n", batch, format_bytes(step.memory.peak_total).c_str());
      best = std::move(step);
      return true;
    } catch (const OutOfMemoryError& e) {
      std::printf("  batch %d: does not fit: %s\n", batch, first_line(e.what()).c_str());
    } catch (const ConfigError& e) {
      std::printf("  batch %d: does not fit: %s\n", batch, first_line(e.what()).c_str());
    }
    std::fflush(stdout);
    return false;
  };

  int good = 0, bad = 0;  // the largest batch known to fit (0: none), the smallest known not to (0: none)
  for (int batch = 1; bad == 0; batch = batch > max / 2 ? max : batch * 2) {
    (fits(batch) ? good : bad) = batch;
    if (batch == max) break;
  }
  if (good == 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "glassbox: max-batch: not even batch 1 fits\n");  // a failure says so as every other does
    return kExitFailure;
  }
  std::optional<StepMemory> at_good = best;
  while (bad != 0 && bad - good > 1) {
    const int middle = good + (bad - good) / 2;
    if (fits(middle)) {
      good = middle;
      at_good = best;
    } else {
      bad = middle;
    }
  }
  if (bad == 0) {
    std::printf("largest batch that fits: %d or more (the --max tried)\n", good);
  } else {
    std::printf("largest batch that fits: %d (%d does not)\n", good, bad);
  }
  // Note [Convolutions by slices of the batch]: on the CPU a convolution
  // slices the batch by its largest divisor that fits a core's cache, so the
  // workspace follows the batch's divisors and a larger batch (a prime one)
  // can need less memory than a smaller one. Bisection assumes the opposite.
  if (!choice.device.is_cuda() && bad != 0 && convolves) {
    std::printf("(on the CPU the memory need is not monotone in the batch: a convolution's workspace follows the "
                "batch's divisors, so a batch above %d may still fit)\n", bad);
  }
  std::printf("\nmemory at batch %d:\n%s", good,
              memory_table(at_good->memory, at_good->plan, Phase::kTraining, options.precision).c_str());
  return 0;
}

}  // namespace glassbox::cli
