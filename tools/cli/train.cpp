// tools/cli/train.cpp: `glassbox train NET --data SPEC`: real training to real
// accuracy, with a progress bar, a table of epochs, checkpoints and a log.
//
// The run's settings (data, batch, learning rate and schedule, momentum,
// weight decay, seed, ...) are saved with each checkpoint. `--resume DIR`
// takes them from there: a flag given again must agree with the
// checkpoint, and only --epochs may grow, so a resumed run is the run that
// stopped, continued (Note [One random stream per epoch] in train/trainer.h).
//
// Under mpirun (`mpirun -np 2 glassbox train LeNet --data fashion-mnist`)
// every rank trains its shard of each epoch with its gradients averaged over
// the ranks (train/trainer.h); rank 0 prints, logs and writes checkpoints.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "data/data_spec.h"
#include "optim/data_parallel_job.h"
#include "train/trainer.h"
#include "tensor/runtime_info.h"
#include "tools/cli/data_parallel_args.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/text_data.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/progress.h"
#include "tools/cli/table.h"
#include "tools/cli/train_settings.h"
#include "tools/cli/training_log.h"

namespace glassbox::cli {

int run_train(const std::vector<std::string>& words) {
  const Args args("train", train_flags(), words);
  const NetSpec net = network_arg(args, "train");
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  const JobPlacement placement = job_placement();
  if (!choice.note.empty() && placement.rank == 0) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    if (placement.rank == 0) std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  const Device device =
      device_for_rank(choice.device, args.get("--device", ""), placement, cuda_availability().device_count);
  const int threads = share_cpu_cores(device, placement);
  const bool speaks = placement.rank == 0;  // the other ranks train in silence

  const std::string resume_dir = args.get("--resume", "");
  SavedSettings saved;
  if (!resume_dir.empty()) {
    const TrainingState state = read_training_state(resume_dir);
    saved = {.config = state.config, .file = checkpoint_train_path(resume_dir, state.epoch)};
  }
  TrainSettings run = train_settings(args, net, device, placement.size, saved);
  for (const std::string& note : single_process_notes(args, placement.size)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  TrainerOptions& options = run.options;
  const std::string& data_spec = run.data_spec;
  const int batch = run.batch;
  const bool lm = net.language_model;
  options.warn = [](const std::string& message) { std::fprintf(stderr, "glassbox: %s\n", message.c_str()); };

  Context ctx = Context::on(device);
  const std::unique_ptr<Communicator> communicator = make_communicator(ctx, run.parallel.communicator);
  options.communicator = communicator.get();
  options.network = net.name;
  Graph graph = build_net(net, batch);
  // The compile flags (graph/compile_flags.h); the precision is the run's
  // setting, saved with its checkpoints, so a resume keeps it.
  CompileOptions compile = compile_options_from_flags(args.values());
  compile.precision = run.precision;
  // --check-numerics reads every value after the step: none may share memory.
  compile.memory_reuse = options.check_numerics ? MemoryReuse::kOff : MemoryReuse::kOn;
  graph.compile(ctx, compile);
  std::optional<Trainer> trainer_storage;
  std::string data_line = data_spec;
  // A data spec the checkpoint saved that does not open (a bad spec, a
  // folder that is gone) is the file's error, naming it.
  auto opened = [&](const auto& open) {
    try {
      return open();
    } catch (const Error& e) {
      const bool spec_or_data = dynamic_cast<const ConfigError*>(&e) != nullptr ||
                                dynamic_cast<const DataError*>(&e) != nullptr;
      if (run.data_spec_source.empty() || !spec_or_data) throw;
      throw DataError(cat(run.data_spec_source, ": ", e.what()));
    }
  };
  if (lm) {
    TextData text = opened([&] { return open_text_data(ctx, data_spec, net, batch); });
    data_line = cat(text.corpus->describe(), "\n      windows of ", net.sample[0], " tokens x ", batch,
                    " streams: ", text.train->describe());
    options.vocabulary = text.corpus->vocabulary_digest();  // Note [A language model's vocabulary]
    trainer_storage.emplace(ctx, net, graph, std::move(text.train), std::move(text.validation), std::move(text.test),
                            options);
  } else {
    DataSplits data = opened([&] {
      refuse_text_for_images(data_spec, net);
      return open_data(data_spec, net.sample, net.classes, run.data);
    });
    trainer_storage.emplace(ctx, net, graph, std::move(data), options);
  }
  Trainer& trainer = *trainer_storage;
  if (!resume_dir.empty()) trainer.resume(resume_dir);
  // Every rank's replica and settings (--log among them) agree, and the
  // checkpoint directory is claimed, before rank 0 opens the log: a refused
  // job writes nothing.
  if (!run.log_path.empty() && speaks) check_log_path(run.log_path, options.checkpoint_dir);
  trainer.check_job();
  std::optional<TrainingLog> log;
  if (!run.log_path.empty() && speaks) {
    log.emplace(run.log_path, run.log_every, lm ? TrainingLog::Units::kTokens : TrainingLog::Units::kImages);
  }

  const RuntimeInfo info = runtime_info(ctx);
  if (!speaks) {
    trainer.run();
    return 0;
  }
  std::printf("%s on %s (%s), batch %d, %s\n", net.name.c_str(), info.device.c_str(), info.device_name.c_str(), batch,
              info.precision.c_str());
  std::printf("data: %s\n", data_line.c_str());
  if (placement.size > 1) {
    std::printf("data-parallel: %d ranks (%s), batch %d per rank, %d in all; %s gradient buckets of %s MiB; "
                "%d CPU thread%s per rank\n",
                placement.size, std::string(communicator->backend()).c_str(), batch, batch * placement.size,
                options.sync.overlap ? "overlapped" : "not overlapped",
                cat(static_cast<double>(options.sync.bucket_bytes) / (1 << 20)).c_str(), threads,
                threads == 1 ? "" : "s");
  }
  std::printf("SGD: lr %s, %s schedule%s, momentum %s%s, weight decay %s%s; seed %llu\n",
              options.config.at("lr").c_str(), options.schedule.str().c_str(),
              options.warmup_epochs
                  ? cat(" after ", options.warmup_epochs, " warm-up epoch", options.warmup_epochs == 1 ? "" : "s").c_str()
                  : "",
              options.config.at("momentum").c_str(), options.sgd.nesterov ? " (Nesterov)" : "",
              options.config.at("weight_decay").c_str(),
              options.sgd.max_grad_norm > 0 ? cat(", gradients clipped to norm ", options.config.at("clip")).c_str() : "",
              static_cast<unsigned long long>(options.seed));
  std::printf("%d epoch%s of %lld step%s%s%s\n\n", options.epochs, options.epochs == 1 ? "" : "s",
              static_cast<long long>(trainer.steps_per_epoch()), trainer.steps_per_epoch() == 1 ? "" : "s",
              resume_dir.empty() ? "" : cat(", resumed after epoch ", trainer.state().epoch).c_str(),
              options.checkpoint_dir.empty() ? "" : cat("; checkpoints in ", options.checkpoint_dir).c_str());
  if (log) {
    std::map<std::string, std::string> start = options.config;
    start["device"] = info.device;
    log->start(start);
  }

  Progress progress(stdout, output_is_terminal(stdout, placement), lm ? Progress::Units::kTokens : Progress::Units::kImages,
                    placement.size);
  progress.header();
  std::optional<EpochReport> last;
  // The log first: an epoch whose checkpoint is saved keeps its log line
  // even where printing its row fails (a closed pipe ends the run there).
  trainer.run({.on_step =
                   [&](const StepReport& step) {
                     if (log) log->step(step);
                     progress.step(step);
                   },
               .on_epoch =
                   [&](const EpochReport& epoch) {
                     if (log) log->epoch(epoch);
                     progress.epoch(epoch);
                     last = epoch;
                   }});
  if (last && last->test && !last->test->has_accuracy) {
    std::printf("\ntest perplexity after epoch %d: %s (%s tokens)\n", last->epoch,
                fixed(last->test->perplexity(), 2).c_str(), grouped(last->test->samples).c_str());
  } else if (last && last->test) {
    // Unreadable images are not scored (eval's words): counted apart, each was named on stderr.
    const int64_t unreadable = last->test->unreadable;
    std::printf("\ntest accuracy after epoch %d: %s%% (%s of %s)%s\n", last->epoch,
                fixed(100.0 * last->test->accuracy(), 2).c_str(), grouped(last->test->correct).c_str(),
                grouped(last->test->samples).c_str(),
                unreadable > 0 ? cat(", ", grouped(unreadable), " unreadable, not scored").c_str() : "");
  }
  if (const ReplayCounts* replay = trainer.replay_counts()) {  // --cuda-graph (docs/cuda_graphs.md)
    std::printf("CUDA graph: %lld steps replayed, %lld captured (%zu nodes each), %lld eager\n",
                static_cast<long long>(replay->replays), static_cast<long long>(replay->captures), replay->nodes,
                static_cast<long long>(replay->eager));
  }
  return 0;
}

}  // namespace glassbox::cli
