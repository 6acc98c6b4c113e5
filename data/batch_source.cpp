// data/batch_source.cpp
#include "data/batch_source.h"

#include "tensor/error.h"

namespace glassbox {

LoaderBatches::LoaderBatches(std::unique_ptr<Loader> loader) : owned_(std::move(loader)), loader_(owned_.get()) {
  if (loader_ == nullptr) throw ConfigError("LoaderBatches: no loader (a null pointer)");
}

LoaderBatches::LoaderBatches(Loader& loader) : loader_(&loader) {}

std::string LoaderBatches::describe() const { return loader_->dataset().describe(); }

int64_t LoaderBatches::next(Graph& graph) { return loader_->next(graph.input("images"), graph.input("labels")); }

}  // namespace glassbox
