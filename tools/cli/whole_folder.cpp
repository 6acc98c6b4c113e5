// tools/cli/whole_folder.cpp: a hidden staging folder inside --out, and one
// rename(2) per folder it holds.
#include "tools/cli/whole_folder.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tensor/error.h"

namespace glassbox::cli {

namespace fs = std::filesystem;

// Note [A folder made whole]: the images go into a hidden folder inside
// `out`, ".partial-XXXXXX", and its folders (train, val) are renamed into
// `out` once every image is written. A make that fails removes what it put
// in `out`, and `out` and the folders above it where it made them. So `out`
// never holds part of a data set, which would train without a word (a full
// disk once left 3 of 4 validation images, scored as a whole set). A make
// that is killed leaves the hidden folder, which no reader lists and the
// next make-folder names. Staging inside `out`, not beside it, keeps `out`
// itself (its mode, its owner, a mount point, the shell's current folder)
// and needs no permission but to write into it.
std::string make_folder_whole(const std::string& out, const std::vector<std::string>& folders,
                              const std::function<std::string(const std::string& into)>& make) {
  std::error_code error;
  // The first folder, from `out` up, that does not exist yet: this call makes
  // it, and removes it again where the make fails.
  fs::path made, there;
  // A link counts as there, pointing anywhere or nowhere: never this call's to remove.
  for (fs::path at = fs::path(out); !at.empty(); at = at.parent_path()) {
    if (fs::exists(fs::symlink_status(at, error))) {
      there = at;
      break;
    }
    if (!at.filename().empty()) made = at;  // "out/" names the same folder as "out"
    if (at == at.parent_path()) break;
  }
  // The first folder there, `out` or one above it, may be a link to nothing.
  const fs::path link = there.empty() || !there.filename().empty() ? there : there.parent_path();
  if (!link.empty() && fs::is_symlink(fs::symlink_status(link, error)) && !fs::exists(link, error)) {
    throw Error(cat("make-folder: cannot make a folder in ", out, ": ", link.string(), " is a link to ",
                    fs::read_symlink(link, error).string(), ", which leads nowhere"));
  }
  error.clear();
  if (!made.empty()) fs::create_directories(out, error);
  std::string into = (fs::path(out) / ".partial-XXXXXX").string();
  if (error || ::mkdtemp(into.data()) == nullptr) {
    const std::string reason = error ? error.message() : std::strerror(errno);
    if (!made.empty()) fs::remove_all(made, error);
    throw Error(cat("make-folder: cannot make a folder in ", out, ": ", reason));
  }
  std::vector<fs::path> moved;  // in `out`, once renamed there
  try {
    std::string done = make(into);
    for (const std::string& name : folders) {
      const fs::path from = fs::path(into) / name, to = fs::path(out) / name;
      if (::rename(from.c_str(), to.c_str()) != 0) {
        throw Error(cat("make-folder: cannot move ", from.string(), " to ", to.string(), ": ", std::strerror(errno)));
      }
      moved.push_back(to);
    }
    fs::remove(into, error);
    return done;
  } catch (...) {
    for (const fs::path& folder : moved) fs::remove_all(folder, error);
    fs::remove_all(made.empty() ? fs::path(into) : made, error);
    throw;
  }
}

}  // namespace glassbox::cli
