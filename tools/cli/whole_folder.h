// tools/cli/whole_folder.h: a data set folder made whole or not at all, for
// `glassbox make-folder` (Note [A folder made whole], whole_folder.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace glassbox::cli {

// Makes `out` (or takes it as it is, an empty folder or a link to one) and
// runs make(into), which writes the data set's `folders` ("train", "val")
// under the new hidden folder `into` inside it; then moves them up into
// `out`. Where anything fails, what this call made is removed, the folders
// above `out` it made included, and the error goes on. Returns what make
// returned. Throws Error naming `out` where a folder cannot be made, and the
// folder where it cannot be moved.
std::string make_folder_whole(const std::string& out, const std::vector<std::string>& folders,
                              const std::function<std::string(const std::string& into)>& make);

}  // namespace glassbox::cli
