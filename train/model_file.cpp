// train/model_file.cpp: a file's tensors matched to a graph's (train/model_file.h).
#include "train/model_file.h"

#include <cstring>
#include <map>
#include <set>

#include "nets/torch_names.h"
#include "tensor/copy.h"

namespace glassbox::model_file {
namespace {

constexpr size_t kListed = 5;  // names listed per kind of problem; then a count

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (const int64_t d : shape) text += cat(text.empty() ? "" : ", ", d);
  return "(" + text + ")";
}

// "a, b, c, d, e and 7 more"
std::string some_of(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < kListed; ++i) text += cat(i ? ", " : "", names[i]);
  if (names.size() > kListed) text += cat(" and ", names.size() - kListed, " more");
  return text;
}

std::map<std::string, Tensor> by_name(const std::vector<NamedTensor>& tensors) {
  std::map<std::string, Tensor> map;
  for (const NamedTensor& t : tensors) map.emplace(t.name, t.tensor);
  return map;
}

}  // namespace

std::vector<Wanted> model_tensors(const Graph& graph, const NetSpec& net) {
  std::map<std::string, Tensor> tensors = by_name(graph.named_parameters());
  tensors.merge(by_name(graph.named_state()));
  std::vector<Wanted> wanted;
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    if (t.kind == TorchTensorKind::kBatchesTracked) {
      wanted.push_back({t.torch, "I64", t.shape, Tensor()});
    } else {
      wanted.push_back({t.torch, "F32", t.shape, tensors.at(t.glassbox)});  // the same graph: every name is there
    }
  }
  return wanted;
}

std::vector<Wanted> momentum_tensors(const Graph& graph, const NetSpec& net, const Tensor& velocity) {
  const std::map<std::string, Tensor> buffers = by_name(graph.named_views(velocity));
  std::vector<Wanted> wanted;
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    if (t.kind == TorchTensorKind::kParameter) {
      wanted.push_back({"momentum_buffer." + t.torch, "F32", t.shape, buffers.at(t.glassbox)});
    }
  }
  return wanted;
}

std::vector<const HostTensor*> match(const SafetensorsFile& file, const std::vector<Wanted>& wanted,
                                     const std::string& path, const std::string& net) {
  std::map<std::string_view, const HostTensor*> in_file;
  for (const HostTensor& t : file.tensors) in_file.emplace(t.name, &t);
  std::vector<std::string> wrong, missing, unexpected;
  std::set<std::string_view> wanted_names;
  std::vector<const HostTensor*> found;
  for (const Wanted& w : wanted) {
    wanted_names.insert(w.name);
    const auto it = in_file.find(w.name);
    found.push_back(it == in_file.end() ? nullptr : it->second);
    if (it == in_file.end()) {
      missing.push_back(w.name);
      continue;
    }
    const HostTensor& t = *it->second;
    if (t.dtype != w.dtype) {
      wrong.push_back(cat(w.name, ": the file has ", t.dtype, " ", shape_text(t.shape), ", ", net, " expects ",
                          w.dtype, " ", w.shape.str()));
    } else if (t.shape != w.shape.dims()) {
      wrong.push_back(cat(w.name, ": the file has ", shape_text(t.shape), ", ", net, " expects ", w.shape.str()));
    }
  }
  for (const HostTensor& t : file.tensors) {
    if (!wanted_names.count(t.name)) unexpected.push_back(t.name);
  }
  if (wrong.empty() && missing.empty() && unexpected.empty()) return found;

  std::string problems;
  auto add = [&](const std::string& part) { problems += (problems.empty() ? "" : "; ") + part; };
  for (size_t i = 0; i < wrong.size() && i < kListed; ++i) add(wrong[i]);
  if (wrong.size() > kListed) add(cat("and ", wrong.size() - kListed, " more of another shape or dtype"));
  if (!missing.empty()) add(cat(missing.size(), " missing: ", some_of(missing)));
  if (!unexpected.empty()) add(cat(unexpected.size(), " unexpected: ", some_of(unexpected)));
  throw DataError(cat(path, ": does not match ", net, ": ", problems));
}

void assign(Context& ctx, const std::vector<Wanted>& wanted, const std::vector<const HostTensor*>& found) {
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (!wanted[i].target.defined()) continue;  // num_batches_tracked: checked, not kept
    // A float copy of the bytes: the file's buffer is bytes, not floats.
    std::vector<float> values(found[i]->bytes.size() / sizeof(float));
    std::memcpy(values.data(), found[i]->bytes.data(), found[i]->bytes.size());
    from_vector<float>(ctx, values, wanted[i].target);
  }
}

HostTensor host_copy(Context& ctx, const std::string& name, const Tensor& tensor) {
  const std::vector<float> values = to_vector<float>(ctx, tensor);
  HostTensor t{.name = name, .dtype = "F32", .shape = tensor.shape().dims()};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

}  // namespace glassbox::model_file
