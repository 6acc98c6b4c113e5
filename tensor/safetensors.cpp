// tensor/safetensors.cpp: the safetensors reader and writer (tensor/safetensors.h).
//
// Reading checks the file as the Python library does (its Rust core's
// `SafeTensors::read_metadata` and `validate`) and a little more: keys given
// twice (JSON parsers silently keep one), unknown fields in a tensor's entry,
// nesting past the format's, sizes past Glassbox's 2^48 elements. Every
// problem goes through bad_file(): one message shape, "PATH: what is wrong,
// where", whatever the file got wrong.
#include "tensor/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_set>

#include "tensor/atomic_file.h"
#include "tensor/error.h"
#include "tensor/grouped.h"
#include "tensor/input_file.h"
#include "tensor/json_error.h"
#include "tensor/parse.h"
#include "tensor/shape.h"

namespace glassbox {
namespace {

// The reader keeps the file's order of tensors (between tensors of no bytes,
// equal offsets, it is the only order) in a vector of its own (HeaderParser),
// so its values are plain json. The writer lists __metadata__ first and the
// tensors in data order, as the Python library does.
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Names from the file in messages: cut past this many characters (real ones
// run to 60 or so: "model.vision_tower.encoder.layers.26.self_attn.out_proj.weight").
constexpr size_t kNameChars = 120;

// The Python library refuses longer headers (its MAX_HEADER_SIZE): a length
// past it is a corrupt file, not a header to allocate memory for.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A header within that length can still name a million empty tensors, each
// kept as a JSON object and an entry (about 1 kB apiece) before any check:
// past this many entries it is refused as it is read. The largest models
// published hold some tens of thousands of tensors.
constexpr size_t kMaxHeaderEntries = 250'000;

constexpr struct { std::string_view name; size_t bytes; } kDtypes[] = {
    {"BOOL", 1},    {"U8", 1},       {"I8", 1},       {"F8_E5M2", 1},  {"F8_E4M3", 1}, {"F8_E8M0", 1},
    {"F8_E4M3FNUZ", 1}, {"F8_E5M2FNUZ", 1}, {"I16", 2}, {"U16", 2},    {"F16", 2},     {"BF16", 2},
    {"I32", 4},     {"U32", 4},      {"F32", 4},      {"I64", 8},      {"U64", 8},     {"F64", 8},
    {"C64", 8}};
// The format's types of 4 and 6 bits pack several elements into a byte.
constexpr std::string_view kSubByteDtypes[] = {"F4", "F6_E2M3", "F6_E3M2"};

size_t element_size(std::string_view dtype) {  // 0: not a type Glassbox reads
  for (const auto& d : kDtypes) {
    if (d.name == dtype) return d.bytes;
  }
  return 0;
}

std::string known_dtypes() {
  std::string names;
  for (const auto& d : kDtypes) names += cat(names.empty() ? "" : ", ", d.name);
  return names;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (const int64_t d : shape) text += cat(text.empty() ? "" : ", ", d);
  return "(" + text + ")";
}

[[noreturn]] void bad_file(const std::string& path, const std::string& problem) {
  throw DataError(cat(path, ": ", problem));
}

// A tensor's name, or another key from the file, quoted for a message.
std::string in_quotes(std::string_view name) { return cat("'", excerpt(name, kNameChars), "'"); }

// One tensor's entry of the header, checked on its own.
struct Entry {
  HostTensor tensor;  // bytes not yet read
  uint64_t begin = 0, end = 0;  // data offsets
};

uint64_t unsigned_at(const Json& value) { return value.get<uint64_t>(); }

Entry parse_entry(const std::string& name, const Json& entry, const std::string& path) {
  const auto what = [&] { return cat("tensor ", in_quotes(name)); };  // made only for a message
  if (!entry.is_object()) {
    bad_file(path, cat(what(), ": its entry is a JSON ", entry.type_name(),
                       "; the format's is an object of dtype, shape and data_offsets"));
  }
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      bad_file(path, cat(what(), ": unknown field \"", excerpt(key),
                         "\" (the format's are dtype, shape and data_offsets)"));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) bad_file(path, cat(what(), ": no \"", key, "\""));
  }
  Entry e;
  e.tensor.name = name;
  const Json& dtype = entry["dtype"];
  if (!dtype.is_string()) bad_file(path, cat(what(), ": dtype is a JSON ", dtype.type_name(), ", not a name"));
  e.tensor.dtype = dtype.get<std::string>();
  const size_t size = element_size(e.tensor.dtype);
  if (size == 0) {
    const bool sub_byte = std::find(std::begin(kSubByteDtypes), std::end(kSubByteDtypes), e.tensor.dtype) !=
                          std::end(kSubByteDtypes);
    bad_file(path, sub_byte ? cat(what(), ": dtype ", e.tensor.dtype,
                                  " packs elements into bits of a byte, which Glassbox does not read")
                            : cat(what(), ": unknown dtype \"", excerpt(e.tensor.dtype), "\" (known: ", known_dtypes(),
                                  ")"));
  }
  const Json& shape = entry["shape"];
  const bool sizes = shape.is_array() && std::all_of(shape.begin(), shape.end(),
                                                     [](const Json& d) { return d.is_number_unsigned(); });
  if (!sizes) {
    bad_file(path, cat(what(), ": shape ", excerpt(shape.dump()), " is not a list of sizes (integers, 0 or more)"));
  }
  uint64_t numel = 1;
  for (const Json& d : shape) {
    const uint64_t dim = unsigned_at(d);
    // Checked one size at a time, so the product below cannot overflow.
    if (dim > static_cast<uint64_t>(kMaxElements) || (dim > 0 && numel > static_cast<uint64_t>(kMaxElements) / dim)) {
      bad_file(path, cat(what(), ": shape ", excerpt(shape.dump()), " has more than 2^48 elements, Glassbox's limit"));
    }
    numel *= dim;
    e.tensor.shape.push_back(static_cast<int64_t>(dim));
  }
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    bad_file(path, cat(what(), ": data_offsets ", excerpt(offsets.dump()), " is not [begin, end], two byte offsets"));
  }
  e.begin = unsigned_at(offsets[0]);
  e.end = unsigned_at(offsets[1]);
  if (e.end < e.begin) bad_file(path, cat(what(), ": data_offsets ", offsets.dump(), " end before they begin"));
  if (e.end - e.begin != numel * size) {
    bad_file(path, cat(what(), ": ", e.tensor.dtype, " ", excerpt(shape_text(e.tensor.shape), kNameChars), " takes ",
                       grouped(numel * size), " bytes; its data_offsets ", offsets.dump(), " hold ",
                       grouped(e.end - e.begin)));
  }
  return e;
}

std::map<std::string, std::string> parse_metadata(const Json& metadata, const std::string& path) {
  std::map<std::string, std::string> values;
  if (metadata.is_null()) return values;  // what the Python library writes for metadata=None... when it writes it
  if (!metadata.is_object()) {
    bad_file(path, cat("__metadata__ is a JSON ", metadata.type_name(), "; the format's is an object of strings"));
  }
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) {
      bad_file(path, cat("__metadata__ \"", excerpt(key, kNameChars), "\" is a JSON ", value.type_name(),
                         "; the format allows strings only"));
    }
    values[key] = value.get<std::string>();
  }
  return values;
}

struct Layout {
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;  // in data order
};

// Note [The header through SAX]: nlohmann's parse with a callback scans the
// enclosing object for discarded values at the end of every object, and
// ordered_json finds a key's place by a linear search; either makes a header
// of n entries take n^2 steps (100,000 entries: a minute). This handler of
// nlohmann's SAX events builds the header's top-level values, in file order,
// into a vector instead; it refuses keys given twice (a parser keeps one of
// them without a word) through a hash set of the header's keys and each
// entry's own map, and nesting deeper than the format's three levels
// (header, entry, shape or offsets). Linear in the header (n log n in the
// keys of one entry).
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& path) : path_(path) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool value) { return put(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return put(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value) { return put(Json(value)); }
  bool number_float(Json::number_float_t value, const Json::string_t&) { return put(Json(value)); }
  bool string(Json::string_t& value) { return put(Json(std::move(value))); }
  bool binary(Json::binary_t& value) { return put(Json(std::move(value))); }  // (not in JSON text)
  bool start_object(std::size_t) {
    open(Json::object());
    keys_.emplace_back();
    return true;
  }
  bool key(Json::string_t& key) {
    // A kept object knows its keys already; the header's are in top_keys_.
    const bool top = open_.size() == 1 && root_type_ == Json::value_t::object;
    const bool added = top                      ? top_keys_.insert(key).second
                       : open_.back() != nullptr ? !open_.back()->contains(key)
                                                 : keys_.back().insert(key).second;
    if (!added) {
      bad_file(path_, cat("the header has the key \"", excerpt(key, kNameChars), "\" twice",
                          open_.size() == 1 ? "" : " in one entry"));
    }
    key_ = std::move(key);
    return true;
  }
  bool end_object() {
    keys_.pop_back();
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    open(Json::array());
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    throw e;
  }

  Json::value_t root_type() const { return root_type_; }
  // The header's keys and values, in file order (when the header is an object).
  std::vector<std::pair<std::string, Json>>& top_level() { return top_level_; }

 private:
  // Puts `value` where it belongs; returns it there, or null where nothing is
  // kept (the header itself, the inside of a header that is not an object).
  Json* place(Json value) {
    if (open_.empty()) {
      root_type_ = value.type();
      return nullptr;
    }
    if (open_.size() == 1) {
      if (root_type_ != Json::value_t::object) return nullptr;
      if (top_level_.size() >= kMaxHeaderEntries) {
        bad_file(path_, cat("the header has more than ", grouped(static_cast<int64_t>(kMaxHeaderEntries)),
                            " entries, the most a file may hold"));
      }
      // (The vector grows only here, when no value below the header is open to point into it.)
      top_level_.emplace_back(key_, std::move(value));
      return &top_level_.back().second;
    }
    Json* parent = open_.back();
    if (parent == nullptr) return nullptr;
    if (parent->is_object()) return &parent->get_ref<Json::object_t&>().emplace(key_, std::move(value)).first->second;
    parent->push_back(std::move(value));
    return &parent->back();
  }
  bool put(Json value) {
    place(std::move(value));
    return true;
  }
  void open(Json container) {
    if (open_.size() >= 3) {
      bad_file(path_, "the header nests JSON deeper than the format (header, tensor entry, list of numbers)");
    }
    open_.push_back(place(std::move(container)));
  }

  const std::string& path_;
  Json::value_t root_type_ = Json::value_t::null;
  std::vector<std::pair<std::string, Json>> top_level_;
  std::vector<Json*> open_;  // the open objects and arrays, outermost first; null: not kept
  std::unordered_set<std::string> top_keys_;  // the header's keys
  std::vector<std::set<std::string>> keys_;   // the keys of each open object that is not kept
  std::string key_;  // the key of the value that comes next, in an object
};

// The header `text` (file bytes 8 to 8 + text.size()) of a file whose data
// area, after it, has `data_bytes` bytes.
Layout parse_header(std::string_view text, uint64_t data_bytes, const std::string& path) {
  const uint64_t data_start = 8 + text.size();
  // Note [NUL ends nlohmann's input]: its lexer takes a NUL byte for the end
  // of the input (as in a C string), so "{} <NUL> anything" would parse as {}.
  // JSON has no raw NUL (a string writes \u0000), so one is refused here.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    bad_file(path, cat("the header (bytes 8 to ", grouped(data_start), ") is not JSON: at byte ", grouped(8 + nul),
                       ": a NUL byte (padding is spaces)"));
  }
  HeaderParser header(path);
  try {
    Json::sax_parse(text.begin(), text.end(), &header);
  } catch (const Json::parse_error& e) {
    bad_file(path, cat("the header (bytes 8 to ", grouped(data_start), ") is not JSON: at byte ",
                       grouped(7 + std::max<size_t>(e.byte, 1)), ": ", json_error_reason(e.what())));
  } catch (const Json::exception& e) {
    bad_file(path, cat("the header (bytes 8 to ", grouped(data_start), ") is not JSON: ", json_error_reason(e.what())));
  }
  if (header.root_type() != Json::value_t::object) {
    bad_file(path, cat("the header is a JSON ", Json(header.root_type()).type_name(),
                       "; the format's is an object of tensors"));
  }

  Layout layout;
  layout.entries.reserve(header.top_level().size());
  for (auto& [name, value] : header.top_level()) {
    if (name == "__metadata__") {
      layout.metadata = parse_metadata(value, path);
    } else {
      layout.entries.push_back(parse_entry(name, value, path));
    }
    value = Json();  // checked: its memory goes now
  }
  std::stable_sort(layout.entries.begin(), layout.entries.end(),
                   [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });

  // Past the end first: a truncated file says more than the gaps it makes.
  for (const Entry& e : layout.entries) {
    if (e.end > data_bytes) {
      const uint64_t end = data_start + e.end;  // wraps only for an offset within data_start of 2^64
      bad_file(path, cat("tensor ", in_quotes(e.tensor.name), " ends at byte ",
                         end < e.end ? std::string("2^64 or beyond") : grouped(end),
                         " (data offset ", grouped(e.end), "), past the end of the file at byte ",
                         grouped(data_start + data_bytes), ": the file is truncated"));
    }
  }
  uint64_t expected = 0;  // where the next tensor must begin
  const Entry* previous = nullptr;
  for (const Entry& e : layout.entries) {
    if (e.begin > expected) {
      bad_file(path, cat("bytes ", grouped(data_start + expected), " to ", grouped(data_start + e.begin),
                         " belong to no tensor: ",
                         previous ? cat(in_quotes(previous->tensor.name), " ends at data offset ", grouped(expected),
                                        ", ", in_quotes(e.tensor.name), " begins at ", grouped(e.begin))
                                  : cat("the first tensor, ", in_quotes(e.tensor.name), ", begins at data offset ",
                                        grouped(e.begin), ", not 0")));
    }
    if (e.begin < expected) {
      bad_file(path, cat("tensor ", in_quotes(e.tensor.name), " (data offsets ", grouped(e.begin), " to ",
                         grouped(e.end), ", bytes ", grouped(data_start + e.begin), " on) overlaps ",
                         in_quotes(previous->tensor.name), ", which ends at data offset ", grouped(expected)));
    }
    expected = e.end;
    previous = &e;
  }
  if (expected < data_bytes) {
    bad_file(path, cat(grouped(data_bytes - expected), " trailing bytes (", grouped(data_start + expected), " to ",
                       grouped(data_start + data_bytes), ") belong to no tensor"));
  }
  return layout;
}

// Reads any source of `size` bytes through read(offset, destination, count),
// which fails (through bad_file) when it cannot deliver.
template <typename ReadAt>
SafetensorsFile read_from(uint64_t size, const ReadAt& read, bool with_data, const std::string& path) {
  if (size < 8) {
    bad_file(path, cat("a file of ", size, " bytes is too short for safetensors: its first 8 bytes give the header's length"));
  }
  unsigned char prefix[8];
  read(0, prefix, 8);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | prefix[i];
  if (header_bytes > kMaxHeaderBytes) {
    bad_file(path, cat("the header length at byte 0 is ", grouped(header_bytes), " bytes, more than the format's ",
                       grouped(kMaxHeaderBytes), ": not a safetensors file"));
  }
  if (header_bytes > size - 8) {
    bad_file(path, cat("the header length at byte 0 is ", grouped(header_bytes), " bytes, but only ",
                       grouped(size - 8), " follow: the file is truncated"));
  }
  std::string text(header_bytes, '\0');
  if (header_bytes > 0) read(8, text.data(), header_bytes);
  Layout layout = parse_header(text, size - 8 - header_bytes, path);
  SafetensorsFile file{.metadata = std::move(layout.metadata)};
  file.tensors.reserve(layout.entries.size());
  for (Entry& e : layout.entries) {
    if (with_data && e.end > e.begin) {  // (an empty vector's data() may be null, which memcpy must not see)
      e.tensor.bytes.resize(e.end - e.begin);
      read(8 + header_bytes + e.begin, e.tensor.bytes.data(), e.end - e.begin);
    }
    file.tensors.push_back(std::move(e.tensor));
  }
  return file;
}

SafetensorsFile read_path(const std::string& path, bool with_data) {
  std::string reason;
  const InputFile file = open_regular_file(path, reason);  // never blocks: a named pipe is refused unopened
  if (!file.is_open()) bad_file(path, cat("cannot read: ", reason));
  const auto read = [&](uint64_t offset, void* destination, uint64_t count) {
    auto* bytes = static_cast<char*>(destination);
    for (uint64_t done = 0; done < count;) {
      const ssize_t n = ::pread(file.fd(), bytes + done, count - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        bad_file(path, cat("cannot read bytes ", grouped(offset), " to ", grouped(offset + count), ": ",
                           n < 0 ? std::strerror(errno) : "the file ended early (did it change while being read?)"));
      }
      done += static_cast<uint64_t>(n);
    }
  };
  return read_from(file.size(), read, with_data, path);
}

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw ConfigError(cat("cannot write ", path, ": ", problem));
}

// The first 8 bytes and the padded header of `file`, checked.
std::string encode_prefix(const SafetensorsFile& file, const std::string& path) {
  const size_t entries = file.tensors.size() + (file.metadata.empty() ? 0 : 1);
  if (entries > kMaxHeaderEntries) {
    refuse(path, cat(grouped(static_cast<int64_t>(entries)), " header entries, more than the ",
                     grouped(static_cast<int64_t>(kMaxHeaderEntries)), " a file may hold"));
  }
  // The header is JSON, which holds UTF-8 text only: say which entry is not.
  auto check_utf8 = [&](std::string_view what, std::string_view text) {
    const size_t at = first_non_utf8(text);
    if (at == std::string_view::npos) return;
    refuse(path, cat(what, " is not UTF-8 text from byte ", at, " on ('", excerpt(text, 80),
                     "'); a safetensors header is JSON, which holds UTF-8 only"));
  };
  for (const auto& [name, value] : file.metadata) {
    check_utf8("a metadata key", name);
    check_utf8(cat("metadata entry \"", excerpt(name), "\""), value);
  }
  for (const HostTensor& t : file.tensors) check_utf8("a tensor name", t.name);
  std::set<std::string_view> names;
  std::vector<uint64_t> offsets = {0};  // tensor i takes [offsets[i], offsets[i + 1])
  for (const HostTensor& t : file.tensors) {
    if (t.name.empty()) refuse(path, "a tensor has an empty name");
    if (t.name == "__metadata__") refuse(path, "a tensor is named \"__metadata__\", the format's key for metadata");
    if (!names.insert(t.name).second) refuse(path, cat("two tensors are named '", t.name, "'"));
    const size_t size = element_size(t.dtype);
    if (size == 0) refuse(path, cat("tensor '", t.name, "': unknown dtype \"", t.dtype, "\" (known: ", known_dtypes(), ")"));
    uint64_t bytes = size;
    bool too_large = false;
    for (const int64_t d : t.shape) {
      if (d < 0) refuse(path, cat("tensor '", t.name, "': shape ", shape_text(t.shape), " has a negative size"));
      too_large = too_large || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes);
    }
    if (too_large || bytes != t.bytes.size()) {
      refuse(path, cat("tensor '", t.name, "': ", t.dtype, " ", shape_text(t.shape), " takes ",
                       too_large ? std::string("more than 2^64") : grouped(bytes), " bytes, it has ",
                       grouped(t.bytes.size())));
    }
    offsets.push_back(offsets.back() + bytes);
  }
  // The object is written a key and a value at a time, not built as one
  // ordered_json: that would find each key's place by a linear search
  // (Note [The header through SAX]). The bytes are the same.
  std::string text = "{";
  const auto key = [&](const std::string& name) {
    if (text.size() > 1) text += ',';
    text += Json(name).dump();
    text += ':';
  };
  if (!file.metadata.empty()) {  // every key and value checked above: the dumps cannot throw
    key("__metadata__");
    text += '{';
    for (const auto& [name, value] : file.metadata) {
      if (text.back() != '{') text += ',';
      text += cat(Json(name).dump(), ":", Json(value).dump());
    }
    text += '}';
  }
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const HostTensor& t = file.tensors[i];
    key(t.name);
    const OrderedJson entry = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offsets[i], offsets[i + 1]}}};
    text += entry.dump();
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');  // the Python library pads to 8 bytes, and so do we
  std::string prefix(8, '\0');
  for (size_t i = 0; i < 8; ++i) prefix[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return prefix + text;
}

}  // namespace

HostTensor host_tensor(std::string name, std::string dtype, std::vector<int64_t> shape, const void* data,
                       size_t bytes) {
  HostTensor t{.name = std::move(name), .dtype = std::move(dtype), .shape = std::move(shape), .bytes = {}};
  t.bytes.resize(bytes);
  if (bytes > 0) std::memcpy(t.bytes.data(), data, bytes);
  return t;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (const int64_t d : shape) n = checked_multiply(n, d, cat("the elements of tensor '", name, "'"));
  return n;
}

size_t safetensors_element_size(const std::string& dtype) {
  const size_t size = element_size(dtype);
  if (size == 0) throw DataError(cat("unknown safetensors dtype \"", dtype, "\" (known: ", known_dtypes(), ")"));
  return size;
}

const HostTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const HostTensor& t) { return t.name == name; });
  return it == tensors.end() ? nullptr : &*it;
}

void write_safetensors(const std::string& path, const SafetensorsFile& file) {
  const std::string prefix = encode_prefix(file, path);
  std::vector<std::string_view> pieces = {prefix};
  for (const HostTensor& t : file.tensors) {
    pieces.emplace_back(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  }
  write_file_atomically(path, pieces);
}

std::string encode_safetensors(const SafetensorsFile& file) {
  std::string bytes = encode_prefix(file, "(in memory)");
  for (const HostTensor& t : file.tensors) bytes.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return bytes;
}

SafetensorsFile read_safetensors(const std::string& path) { return read_path(path, /*with_data=*/true); }

SafetensorsFile read_safetensors_header(const std::string& path) { return read_path(path, /*with_data=*/false); }

SafetensorsFile decode_safetensors(std::span<const std::byte> bytes, const std::string& path) {
  const auto read = [&](uint64_t offset, void* destination, uint64_t count) {
    std::memcpy(destination, bytes.data() + offset, count);  // read_from asks only inside `bytes`
  };
  return read_from(bytes.size(), read, /*with_data=*/true, path);
}

}  // namespace glassbox
