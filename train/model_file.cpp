// train/model_file.cpp: a file's tensors matched to a graph's (train/model_file.h).
#include "train/model_file.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "graph/layouts.h"
#include "nets/torch_names.h"
#include "tensor/copy.h"

namespace glassbox::model_file {
namespace {

constexpr size_t kListed = 5;  // names listed per kind of problem; then a count
// What a file declares (a tensor's name, its shape) is quoted cut to this
// many characters: a name can be megabytes long, a shape thousands of dimensions.
constexpr size_t kShownChars = 120;

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

// "[3, 0, 1, 2]": where element `flat` of a row-major tensor of `shape` is; "" for a scalar.
std::string coordinates(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {  // every size is > 0: the tensor has element `flat`
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string text;
  for (const int64_t i : index) text += cat(text.empty() ? "" : ", ", i);
  return shape.empty() ? "" : "[" + text + "]";
}

// The shortest text that reads back as `value` ("1e+38", "-0.5"); "nan" whatever its sign bit.
std::string float_text(float value) {
  if (std::isnan(value)) return "nan";
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

// Why `values` forbids x, or null.
const char* forbidden(Values values, float x) {
  if (!std::isfinite(x)) return "a model or checkpoint file holds finite values";
  if (values == Values::kVariance && x < 0.0f) return "a variance is never negative";
  if (values == Values::kTrained && std::fabs(x) > kMaxTrained) {
    return "fp32 training keeps weights and momentum within 1.8e19 (Note [How large a trained value can be])";
  }
  return nullptr;
}

// The first value of `t` that `w.values` forbids, as "name[i, j] is value;
// why", or "". The dtype and the shape are the wanted ones.
std::string first_forbidden(const Wanted& w, const HostTensor& t) {
  auto said = [&](int64_t at, const std::string& value, const char* why) {
    return cat(w.name, coordinates(at, t.shape), " is ", value, "; ", why);
  };
  if (w.values == Values::kCount) {  // an I64 scalar
    int64_t count = 0;
    std::memcpy(&count, t.bytes.data(), sizeof count);
    return count < 0 ? said(0, cat(count), "a count is never negative") : "";
  }
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    float x = 0.0f;
    std::memcpy(&x, t.bytes.data() + i * static_cast<int64_t>(sizeof x), sizeof x);
    if (const char* why = forbidden(w.values, x)) return said(i, float_text(x), why);
  }
  return "";
}

// DataError for the first value of `t` that `w.values` forbids, naming the
// file, the tensor, the element and the value. match() has checked the
// dtype and the shape.
void check_values(const Wanted& w, const HostTensor& t, const std::string& path) {
  if (const std::string why = first_forbidden(w, t); !why.empty()) throw DataError(cat(path, ": ", why));
}

}  // namespace

std::vector<Wanted> model_tensors(const Graph& graph, const NetSpec& net) {
  std::map<std::string, Tensor> tensors = by_name(graph.named_parameters());
  tensors.merge(by_name(graph.named_state()));
  std::vector<Wanted> wanted;
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    if (t.kind == TorchTensorKind::kBatchesTracked) {
      wanted.push_back({t.torch, "I64", t.shape, Tensor(), Values::kCount});
    } else {
      // Batch norm's running statistics are the only state tensors.
      const Values values = t.kind == TorchTensorKind::kParameter ? Values::kTrained
                            : t.glassbox.ends_with("running_var") ? Values::kVariance
                                                                  : Values::kStatistic;
      // The same graph: every name is there.
      wanted.push_back({t.torch, "F32", t.shape, tensors.at(t.glassbox), values});
    }
  }
  return wanted;
}

std::vector<Wanted> momentum_tensors(const Graph& graph, const NetSpec& net, const Tensor& velocity) {
  const std::map<std::string, Tensor> buffers = by_name(graph.named_views(velocity));
  std::vector<Wanted> wanted;
  for (const TorchTensor& t : torch_state_dict(net, graph)) {
    if (t.kind == TorchTensorKind::kParameter) {
      wanted.push_back({"momentum_buffer." + t.torch, "F32", t.shape, buffers.at(t.glassbox), Values::kTrained});
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
    // The file's shape as an excerpt (the dtype is one the reader knows).
    if (t.dtype != w.dtype) {
      wrong.push_back(cat(w.name, ": the file has ", t.dtype, " ", excerpt(shape_text(t.shape), kShownChars), ", ",
                          net, " expects ", w.dtype, " ", w.shape.str()));
    } else if (t.shape != w.shape.dims()) {
      wrong.push_back(cat(w.name, ": the file has ", excerpt(shape_text(t.shape), kShownChars), ", ", net,
                          " expects ", w.shape.str()));
    }
  }
  for (const HostTensor& t : file.tensors) {
    if (!wanted_names.count(t.name)) unexpected.push_back(excerpt(t.name, kShownChars));
  }
  if (wrong.empty() && missing.empty() && unexpected.empty()) {
    for (size_t i = 0; i < wanted.size(); ++i) check_values(wanted[i], *found[i], path);
    return found;
  }

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
    // A float copy of the bytes: the file's buffer is bytes, not floats. The
    // file holds PyTorch's order; a KRSC filter takes it transposed.
    std::vector<float> values(found[i]->bytes.size() / sizeof(float));
    std::memcpy(values.data(), found[i]->bytes.data(), found[i]->bytes.size());
    write_in_nchw_order(ctx, values, wanted[i].target);
  }
}

HostTensor savable_copy(Context& ctx, const Wanted& w, const std::string& path) {
  HostTensor copy = host_copy(ctx, w.name, w.target);
  if (const std::string why = first_forbidden(w, copy); !why.empty()) {
    throw NumericalError(cat(path, ": not written: ", why, " (a load refuses such a file)"));
  }
  return copy;
}

HostTensor host_copy(Context& ctx, const std::string& name, const Tensor& tensor) {
  const std::vector<float> values = values_in_nchw_order(ctx, tensor);  // PyTorch's order, whatever the layout
  HostTensor t{.name = name, .dtype = "F32", .shape = tensor.shape().dims()};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

}  // namespace glassbox::model_file
