// tools/cli/commands.h: the verbs of the glassbox tool. Each takes the words
// after the verb and returns the exit code; usage errors throw ConfigError.
#pragma once

#include <string>
#include <vector>

namespace glassbox::cli {

int run_summary(const std::vector<std::string>& words);  // glassbox summary NET [--batch N]
int run_time(const std::vector<std::string>& words);     // glassbox time NET [--batch N] [--device D] ...
int run_max_batch(const std::vector<std::string>& words);  // glassbox max-batch NET [--device D] [--memory-limit SIZE]
int run_train(const std::vector<std::string>& words);      // glassbox train NET --data SPEC [--epochs N] ...
int run_eval(const std::vector<std::string>& words);       // glassbox eval NET --weights FILE --data SPEC | --input FILE
int run_trace(const std::vector<std::string>& words);      // glassbox trace NET [--out FILE] [--batch N] ...
int run_sweep(const std::vector<std::string>& words);      // glassbox sweep NET [--batches 1,2,4,...,256] ...
int run_scale(const std::vector<std::string>& words);      // glassbox scale NET [--gpus 1,2,4,8] [--link L] ...
int run_make_folder(const std::vector<std::string>& words);  // glassbox make-folder --from SPEC|--synthetic --out DIR ...

}  // namespace glassbox::cli
