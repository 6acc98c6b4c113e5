// tools/cli/eval.cpp: `glassbox eval NET --weights FILE`: a trained network's
// accuracy on a test set, or its logits for given images.
//
//   glassbox eval LeNet --weights run/epoch-0010.safetensors --data fashion-mnist
//   glassbox eval ResNet50 --weights resnet50.safetensors --input images.safetensors --logits out.safetensors
//
// The weights are a Glassbox model file or a PyTorch state_dict saved with
// safetensors.torch.save_file (train/checkpoint.h: the same names and
// layouts). The network runs in the inference phase (batch norm on running
// statistics, dropout off) on a plan compiled for inference.
#include <cstdio>

#include "data/data_spec.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "tensor/atomic_file.h"
#include "tensor/copy.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tensor/safetensors.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/table.h"
#include "tools/cli/text_data.h"
#include "tools/cli/train_settings.h"

namespace glassbox::cli {
namespace {

// The F32 tensor "images" of an --input file, checked against the network's
// sample. What the file holds is data: a DataError (exit 1), as for --weights.
HostTensor read_images(const std::string& path, const NetSpec& net) {
  SafetensorsFile file = read_safetensors(path);
  const HostTensor* images = file.find("images");
  if (images == nullptr) throw DataError(cat("--input ", path, ": no tensor named \"images\""));
  const std::vector<int64_t> sample = {net.sample[0], net.sample[1], net.sample[2]};
  if (images->dtype != "F32" || images->shape.size() != 4 || images->shape[0] < 1 ||
      !std::equal(sample.begin(), sample.end(), images->shape.begin() + 1)) {
    std::string shape;
    for (int64_t d : images->shape) shape += cat(shape.empty() ? "" : ", ", d);
    throw DataError(cat("--input ", path, ": \"images\" is ", images->dtype, " (", shape, "); ", net.name,
                          " takes F32 (N, ", net.sample[0], ", ", net.sample[1], ", ", net.sample[2], ")"));
  }
  // A NaN or an infinity would come out as logits of NaN, blamed on nothing.
  const auto* pixels = reinterpret_cast<const float*>(images->bytes.data());  // as eval_input reads them
  const int64_t per_image = images->numel() / images->shape[0];
  for (int64_t i = 0; i < images->numel(); ++i) {
    const float pixel = pixels[i];
    if (!std::isfinite(pixel)) {
      const int64_t c = i % per_image / (sample[1] * sample[2]), y = i % (sample[1] * sample[2]) / sample[2];
      throw DataError(cat("--input ", path, ": images[", i / per_image, ", ", c, ", ", y, ", ", i % sample[2],
                            "] is ", std::isnan(pixel) ? "nan" : pixel > 0 ? "inf" : "-inf",
                            "; eval takes finite pixels"));
    }
  }
  return *images;
}

int eval_input(const Args& args, const NetSpec& net, Context& ctx, const CompileOptions& options) {
  if (args.has("--logits")) check_writable(args.get("--logits", ""));  // before the work
  const HostTensor images = read_images(args.get("--input", ""), net);
  const int batch = static_cast<int>(images.shape[0]);
  Graph graph = build_net(net, batch);
  graph.compile(ctx, options);
  load_model(args.get("--weights", ""), ctx, graph, net);
  const std::vector<float> pixels(reinterpret_cast<const float*>(images.bytes.data()),
                                  reinterpret_cast<const float*>(images.bytes.data()) + images.numel());
  from_vector<float>(ctx, pixels, graph.input("images"));
  fill_zero(ctx, graph.input("labels"));  // the loss layer reads labels; eval ignores its loss
  graph.forward(ctx, Phase::kInference);
  const Tensor& logits = logits_of(graph);
  const std::vector<float> values = to_float_vector(ctx, logits);  // 16-bit in a bf16 or fp16 graph
  check_logits_finite(ctx, graph, values, batch, static_cast<int>(logits.shape().dims().back()), "eval --input");
  if (args.has("--logits")) {
    write_safetensors(args.get("--logits", ""),
                      {.metadata = {{"net", net.name}, {"weights", utf8_or_escaped(args.get("--weights", ""))}},
                       .tensors = {host_tensor("logits", "F32", logits.shape().dims(), values.data(),
                                               values.size() * sizeof(float))}});
    std::printf("wrote the logits of %d images to %s\n", batch, args.get("--logits", "").c_str());
    return 0;
  }
  const auto classes = static_cast<size_t>(logits.shape()[1]);
  for (int n = 0; n < batch; ++n) {
    const auto row = values.begin() + static_cast<std::ptrdiff_t>(n * classes);
    const auto best = std::max_element(row, row + static_cast<std::ptrdiff_t>(classes));
    std::printf("image %d: class %lld (logit %s)\n", n, static_cast<long long>(best - row), fixed(*best, 4).c_str());
  }
  return 0;
}

// A language model's test split: its perplexity over every whole window, the
// state carried from window to window from zeros, as train reports it.
int eval_text(const Args& args, const NetSpec& net, Context& ctx, const CompileOptions& options) {
  const std::string spec = args.get("--data", "");
  const int batch = args.int_in("--batch", net.default_batch(ctx.device()), 1, kMaxInt);
  TextData data = open_text_data(ctx, spec, net, batch, /*test_only=*/true);
  // Note [A language model's vocabulary] (train/trainer.h): a model scored on
  // a corpus of other words gives a perplexity that means nothing.
  const std::string weights = args.get("--weights", "");
  const SafetensorsFile header = read_safetensors_header(weights);
  const auto trained_on = header.metadata.find(kVocabularyKey);
  const std::string vocabulary = data.corpus->vocabulary_digest();
  if (trained_on != header.metadata.end() && trained_on->second != vocabulary) {
    throw ConfigError(cat(weights, " was trained on a vocabulary of ", excerpt(trained_on->second, 80), "; ",
                          data.corpus->name(), " has ", vocabulary, ": its word ids name other words, so the "
                          "perplexity would mean nothing"));
  }
  if (trained_on == header.metadata.end()) {
    std::fprintf(stderr, "glassbox: %s does not say which vocabulary it was trained on (another program's file, or "
                         "a checkpoint without one); the perplexity means something only if it was %s's, %s\n",
                 weights.c_str(), data.corpus->name().c_str(), vocabulary.c_str());
  }
  Graph graph = build_net(net, batch);
  graph.compile(ctx, options);
  load_model(weights, ctx, graph, net);
  const Evaluation result = evaluate(ctx, graph, *data.test);
  std::printf("%s on the test split of %s: %s\n", net.name.c_str(), data.corpus->describe().c_str(),
              data.test->describe().c_str());
  std::printf("perplexity: %s (loss %s over %s tokens); the unigram baseline's: %s\n",
              fixed(result.perplexity(), 2).c_str(), fixed(result.loss(), 4).c_str(),
              grouped(result.samples).c_str(), fixed(data.corpus->unigram_perplexity(Split::kTest), 1).c_str());
  std::printf("time: %s s (%s tokens/s)\n", fixed(result.seconds, 2).c_str(),
              grouped(static_cast<int64_t>(static_cast<double>(result.samples) / result.seconds)).c_str());
  return 0;
}

// "201 images, 1 unreadable, not scored (FILE: reason)": the first few
// unreadable files by name, the rest counted (each was named on stderr).
std::string unreadable_line(const Evaluation& result) {
  std::string names;
  for (const std::string& file : result.unreadable_files) names += cat(names.empty() ? "" : "; ", file);
  const int64_t unnamed = result.unreadable - static_cast<int64_t>(result.unreadable_files.size());
  if (unnamed > 0) names += cat("; and ", grouped(unnamed), " more, each named on stderr");
  return cat(grouped(result.samples + result.unreadable), " images, ", grouped(result.unreadable),
             " unreadable, not scored (", names, ")");
}

int eval_data(const Args& args, const NetSpec& net, Context& ctx, const CompileOptions& options) {
  const std::string spec = args.get("--data", "");
  const DataOptions data_options{
      .on_bad_sample = parse_on_bad_sample("--on-bad-sample", args.get("--on-bad-sample", "skip"))};
  if (net.language_model && args.has("--on-bad-sample")) throw ConfigError(on_bad_sample_for_text(net));
  if (net.language_model) return eval_text(args, net, ctx, options);
  refuse_text_for_images(spec, net);
  const int batch = args.int_in("--batch", net.default_batch(ctx.device()), 1, kMaxInt);
  const DataSplits data = open_data(spec, net.sample, net.classes, data_options);
  Graph graph = build_net(net, batch);
  graph.compile(ctx, options);
  load_model(args.get("--weights", ""), ctx, graph, net);
  Loader loader(ctx, data.test,
                {.batch = batch, .workers = args.int_in("--workers", 0, 0, 1024), .shuffle = false,
                 .mode = SampleMode::kEvaluation, .drop_last = false,
                 .warn = [](const std::string& message) { std::fprintf(stderr, "glassbox: %s\n", message.c_str()); }});
  // Scored batch by batch as evaluate() does, keeping the logits when asked for.
  const Evaluation result = evaluate(ctx, graph, loader);
  std::printf("%s on the test set of %s: %s\n", net.name.c_str(), spec.c_str(), data.test->describe().c_str());
  if (result.unreadable > 0) std::printf("%s\n", unreadable_line(result).c_str());
  std::printf("accuracy: %s%% (%s of %s)\n", fixed(100.0 * result.accuracy(), 2).c_str(),
              grouped(result.correct).c_str(), grouped(result.samples).c_str());
  std::printf("loss: %s\n", fixed(result.loss(), 4).c_str());
  std::printf("time: %s s (%s images/s; waiting for data %s s)\n", fixed(result.seconds, 2).c_str(),
              grouped(static_cast<int64_t>(static_cast<double>(result.samples) / result.seconds)).c_str(),
              fixed(result.wait_seconds, 2).c_str());
  return 0;
}

}  // namespace

int run_eval(const std::vector<std::string>& words) {
  const Args args("eval", eval_flags(), words);
  const NetSpec net = network_arg(args, "eval");
  if (!args.has("--weights")) throw ConfigError("eval needs --weights FILE (a model file)");
  if (args.has("--data") == args.has("--input")) {
    throw ConfigError(cat("eval needs ", args.has("--data") ? "only " : "", "one of --data SPEC (score a test set) or "
                          "--input FILE (logits of given images)"));
  }
  if (net.language_model && args.has("--input")) {
    throw ConfigError(cat(net.name, " is a language model: eval scores it on a text's test split (--data text:PATH "
                          "or fortunes); --input takes images"));
  }
  if (args.has("--logits") && !args.has("--input")) {
    throw ConfigError("--logits goes with --input FILE: it writes the logits of those images");
  }
  for (const char* flag : {"--batch", "--workers"}) {
    if (args.has(flag) && !args.has("--data")) {
      throw ConfigError(cat(flag, " goes with --data SPEC: --input FILE is scored as one batch of all its images"));
    }
  }
  if (args.has("--on-bad-sample") && !args.has("--data")) {
    throw ConfigError("--on-bad-sample goes with --data SPEC: it says what to do with an image of the data that "
                      "cannot be read");
  }
  // An output that is also an input would replace a file the run reads.
  if (args.has("--logits")) {
    const std::string out = args.get("--logits", "");
    for (const char* input : {"--weights", "--input"}) {
      if (args.has(input) && same_file(out, args.get(input, ""))) {
        throw ConfigError(cat("--logits ", out, " is also the ", input,
                              " file: writing the logits would replace it; give another path"));
      }
    }
  }
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  if (!choice.note.empty()) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  CompileOptions options = compile_options_from_flags(args.values());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  options.phase = Phase::kInference;
  Context ctx = Context::on(choice.device);
  return args.has("--input") ? eval_input(args, net, ctx, options) : eval_data(args, net, ctx, options);
}

}  // namespace glassbox::cli
