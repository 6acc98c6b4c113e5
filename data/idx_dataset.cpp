// data/idx_dataset.cpp: gzip through zlib's inflate, then the IDX header
// checked field by field, so that every message says which byte is wrong.
#include "data/idx_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <new>

#include "data/shared.h"

namespace glassbox {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;  // IDX element type

std::string hex_bytes(std::string_view bytes, size_t count) {
  std::string text;
  for (size_t i = 0; i < std::min(count, bytes.size()); ++i) {
    char byte[4];
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned>(static_cast<uint8_t>(bytes[i])));
    if (i > 0) text += ' ';
    text += byte;
  }
  return text;
}

uint32_t big_endian(std::string_view bytes, size_t offset) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + offset);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

uint32_t little_endian(std::string_view bytes) {  // gzip writes its sizes so
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// The header's first 4 bytes, then that the whole header (4 + 4 * rank bytes) is there.
// `what` names the dimensions: "images, rows, columns".
void check_magic(std::string_view bytes, const std::string& file, int rank, const char* what) {
  if (bytes.size() >= 4) {
    const auto type = static_cast<uint8_t>(bytes[2]);
    const auto dims = static_cast<uint8_t>(bytes[3]);
    if (bytes[0] != 0 || bytes[1] != 0) {
      throw DataError(cat(file, ": byte 0: not an IDX file: expected the magic 00 00 08 0", rank, " (", what,
                          "), found ", hex_bytes(bytes, 4)));
    }
    if (type != kUnsignedByte) {
      throw DataError(cat(file, ": byte 2: IDX element type ", hex_bytes(bytes.substr(2), 1),
                          ", expected 08 (unsigned bytes)"));
    }
    if (dims != rank) {
      throw DataError(cat(file, ": byte 3: ", int{dims}, dims == 1 ? " dimension" : " dimensions", ", expected ",
                          rank, " (", what, ")", rank == 3 ? ": is it a labels file?" : ": is it an images file?"));
    }
  }
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) {
    throw DataError(cat(file, ": truncated at byte ", grouped(static_cast<int64_t>(bytes.size())),
                        " of the decompressed data: an IDX header of ", rank, rank == 1 ? " dimension" : " dimensions",
                        " (", what, ") needs ", header, " bytes"));
  }
}

// The data after the header must be exactly `expected` bytes.
void check_length(std::string_view bytes, const std::string& file, size_t expected, const std::string& what) {
  if (bytes.size() < expected) {
    throw DataError(cat(file, ": truncated at byte ", grouped(static_cast<int64_t>(bytes.size())),
                        " of the decompressed data: ", what, " need ", grouped(static_cast<int64_t>(expected)),
                        " bytes"));
  }
  if (bytes.size() > expected) {
    throw DataError(cat(file, ": byte ", grouped(static_cast<int64_t>(expected)), ": ",
                        grouped(static_cast<int64_t>(bytes.size() - expected)), " bytes past the end of ", what,
                        "; expected the data to end there"));
  }
}

// inflateEnd on every path out.
struct Inflater {
  z_stream stream{};
  bool open = false;
  ~Inflater() {
    if (open) inflateEnd(&stream);
  }
};

constexpr std::string_view kIdxLimit = "an IDX file (the data set is held in memory whole)";

// What gunzip may produce: its max_bytes until the IDX header at the start of
// the output is out, then the size that header gives, if smaller.
struct OutputLimit {
  uint64_t bytes = 0;  // the most bytes
  std::string claimed;   // what the header says the data are ("10 images of 28x28"); empty: no header's limit
  bool settled = false;  // the start of the output has been looked at
  bool no_header = false;  // it starts with no IDX header: limited to kNoHeaderBytes
};

// What gunzip decompresses of data that start with no IDX header: enough for
// a short file to reach the parser whole (which names the byte that is
// wrong), and never the gigabytes a gzip bomb expands to.
constexpr uint64_t kNoHeaderBytes = 4096;

// Settles `limit` once `out` holds an IDX header (00 00 08 RANK, RANK sizes)
// or shows that it starts with none.
void settle(OutputLimit& limit, std::string_view out) {
  if (out.size() < 4) return;
  const auto rank = static_cast<uint8_t>(out[3]);
  if (out[0] != 0 || out[1] != 0 || static_cast<uint8_t>(out[2]) != kUnsignedByte || rank == 0) {
    limit.settled = true;  // not an IDX header: parsing says so at byte 0, 2 or 3
    limit.no_header = true;
    limit.bytes = std::min(limit.bytes, kNoHeaderBytes);
    return;
  }
  const size_t header = 4 + 4 * size_t{rank};
  if (out.size() < header) return;
  limit.settled = true;
  uint64_t total = 1;  // the product of the sizes, saturated past the limit
  std::string sizes;
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t size = big_endian(out, 4 + 4 * i);
    if (total > limit.bytes || __builtin_mul_overflow(total, uint64_t{size}, &total)) total = limit.bytes + 1;
    sizes += cat(i == 0 ? "" : "x", size);
  }
  total = std::min(total, limit.bytes + 1) + header;
  if (total > limit.bytes) return;
  limit.bytes = total;
  const uint32_t count = big_endian(out, 4);
  limit.claimed = rank == 3   ? cat(grouped(count), " images of ", big_endian(out, 8), "x", big_endian(out, 12))
                  : rank == 1 ? cat(grouped(count), " labels")
                              : cat("an array of ", sizes);
}

}  // namespace

std::string gunzip(std::string_view bytes, const std::string& file, uint64_t max_bytes) {
  Inflater inflater;
  z_stream& z = inflater.stream;
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();  // 16: gzip wrapper only
  inflater.open = true;
  OutputLimit limit{.bytes = std::min<uint64_t>(max_bytes, uint64_t{1} << 62)};  // (so that bytes + 1 cannot wrap)
  // The last 4 bytes of a gzip file are its (last member's) size mod 2^32: a
  // hint, which nothing checks before the end, kept within deflate's best
  // ratio (about 1032:1). It sizes the buffer only under a header's limit.
  const uint64_t hint =
      std::min<uint64_t>(bytes.size() >= 4 ? little_endian(bytes.substr(bytes.size() - 4)) : 0, bytes.size() * 1032ull);
  // 4 KiB holds any IDX header (4 + 4 * 255 bytes at most), so the limit is
  // settled before the buffer first grows.
  std::string out(std::min<uint64_t>(4096, limit.bytes + 1), '\0');
  size_t consumed = 0;  // input bytes handed to zlib before this chunk
  size_t produced = 0;
  auto offset = [&] { return grouped(static_cast<int64_t>(consumed - z.avail_in)); };
  while (true) {
    if (z.avail_in == 0 && consumed < bytes.size()) {  // avail_in is 32 bits: feed at most 1 GiB at a time
      const size_t chunk = std::min<size_t>(bytes.size() - consumed, size_t{1} << 30);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + consumed));
      z.avail_in = static_cast<uInt>(chunk);
      consumed += chunk;
    }
    if (produced == out.size()) {  // (below the limit: output past it has thrown)
      uint64_t size = 2 * out.size();
      if (!limit.claimed.empty()) size = std::max(size, std::min(hint, limit.bytes) + 1);
      out.resize(static_cast<size_t>(std::min(size, limit.bytes + 1)));
    }
    const size_t room = std::min<size_t>(out.size() - produced, size_t{1} << 30);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(room);
    const int status = inflate(&z, Z_NO_FLUSH);
    produced += room - z.avail_out;
    if (!limit.settled) settle(limit, std::string_view(out.data(), produced));
    if (produced > limit.bytes && limit.no_header) {
      // Worded as the parser's check_magic words the same bytes.
      const std::string why =
          out[0] != 0 || out[1] != 0
              ? cat("byte 0 of the decompressed data: not an IDX file: it starts ", hex_bytes(out, 4),
                    ", where an IDX header starts 00 00 08 and a rank")
          : static_cast<uint8_t>(out[2]) != kUnsignedByte
              ? cat("byte 2: IDX element type ", hex_bytes(out.substr(2), 1), ", expected 08 (unsigned bytes)")
              : std::string("byte 3: 0 dimensions, expected 1 (labels) or 3 (images)");
      throw DataError(cat(file, ": ", why, "; decompressing stops after ", grouped(limit.bytes), " bytes"));
    }
    if (produced > limit.bytes) {
      throw DataError(
          limit.claimed.empty()
              ? cat(file, ": the decompressed data go on past ", grouped(limit.bytes), " bytes, the limit for ",
                    kIdxLimit, "; decompressing stops there")
              : cat(file, ": byte ", grouped(limit.bytes), " of the decompressed data: the data go on past the end of ",
                    limit.claimed, ", where the IDX header says they end; decompressing stops there, as a gzip "
                    "file can expand a thousandfold"));
    }
    if (status == Z_STREAM_END) {
      if (z.avail_in == 0 && consumed == bytes.size()) break;
      // Another gzip member follows (gzip -c a b > ab.gz is one valid file); anything else is not gzip.
      const size_t at = consumed - z.avail_in;
      if (bytes.size() - at < 2 || static_cast<uint8_t>(bytes[at]) != 0x1f || static_cast<uint8_t>(bytes[at + 1]) != 0x8b) {
        throw DataError(cat(file, ": byte ", grouped(static_cast<int64_t>(at)), " of the gzip file: ",
                            grouped(static_cast<int64_t>(bytes.size() - at)),
                            " bytes after the end of the gzip stream, expected the file to end or another "
                            "member (1f 8b)"));
      }
      inflateReset(&z);
      continue;
    }
    if (status == Z_MEM_ERROR) throw std::bad_alloc();
    if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_STREAM_ERROR) {
      throw DataError(cat(file, ": corrupt gzip data near byte ", offset(), " of the gzip file (zlib: ",
                          z.msg != nullptr ? z.msg : "invalid data", ")"));
    }
    if (status == Z_BUF_ERROR && z.avail_in == 0 && consumed == bytes.size() && z.avail_out > 0) {
      throw DataError(cat(file, ": truncated gzip stream: it ends at byte ", grouped(static_cast<int64_t>(bytes.size())),
                          " of the gzip file, after ", grouped(static_cast<int64_t>(produced)),
                          " bytes of decompressed data, before its end marker"));
    }
  }
  out.resize(produced);
  return out;
}

std::string read_maybe_gzip(const std::string& path) {
  std::string bytes, reason;
  if (!read_file(path, bytes, reason, kMaxIdxBytes, kIdxLimit)) {
    throw DataError(cat(path, ": cannot read: ", reason));
  }
  const bool gzip = bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f && static_cast<uint8_t>(bytes[1]) == 0x8b;
  return gzip ? gunzip(bytes, path) : bytes;
}

IdxImages parse_idx_images(std::string_view bytes, const std::string& file, int rows, int columns) {
  check_magic(bytes, file, 3, "images, rows, columns");
  IdxImages images;
  images.count = big_endian(bytes, 4);
  const uint32_t file_rows = big_endian(bytes, 8), file_columns = big_endian(bytes, 12);
  if (images.count == 0) throw DataError(cat(file, ": byte 4: 0 images; expected at least one"));
  if (file_rows != static_cast<uint32_t>(rows) || file_columns != static_cast<uint32_t>(columns)) {
    throw DataError(cat(file, ": byte 8: images of ", file_rows, "x", file_columns, ", expected ", rows, "x", columns));
  }
  images.rows = rows;
  images.columns = columns;
  const size_t pixels = static_cast<size_t>(images.count) * static_cast<size_t>(rows) * static_cast<size_t>(columns);
  check_length(bytes, file, 16 + pixels, cat(grouped(images.count), " images of ", rows, "x", columns));
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + 16;
  images.pixels.assign(data, data + pixels);
  return images;
}

std::vector<uint8_t> parse_idx_labels(std::string_view bytes, const std::string& file) {
  check_magic(bytes, file, 1, "labels");
  const uint32_t count = big_endian(bytes, 4);
  if (count == 0) throw DataError(cat(file, ": byte 4: 0 labels; expected at least one"));
  check_length(bytes, file, 8 + size_t{count}, cat(grouped(count), " labels"));
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + 8;
  std::vector<uint8_t> labels(data, data + count);
  for (uint32_t i = 0; i < count; ++i) {
    if (labels[i] >= kIdxClasses) {
      throw DataError(cat(file, ": byte ", grouped(8 + int64_t{i}), ": label ", int{labels[i]}, " (of image ",
                          grouped(i), "); expected 0 to ", kIdxClasses - 1));
    }
  }
  return labels;
}

IdxDataset::IdxDataset(IdxDatasetOptions options) : options_(std::move(options)) {
  images_ = parse_idx_images(read_maybe_gzip(options_.images_path), options_.images_path);
  labels_ = parse_idx_labels(read_maybe_gzip(options_.labels_path), options_.labels_path);
  if (static_cast<int64_t>(labels_.size()) != images_.count) {
    throw DataError(cat(options_.images_path, " has ", grouped(images_.count), " images but ", options_.labels_path,
                        " has ", grouped(static_cast<int64_t>(labels_.size())), " labels"));
  }
  for (int v = 0; v < 256; ++v) normalised_[v] = (static_cast<float>(v) / 255.0f - options_.mean) / options_.stddev;
}

std::string IdxDataset::describe() const {
  return cat(options_.name, ": ", grouped(images_.count), " images 1x", images_.rows, "x", images_.columns, ", ",
             kIdxClasses, " classes (", std::filesystem::path(options_.images_path).parent_path().string(), ")");
}

int IdxDataset::load(int64_t index, std::span<float> pixels, SampleMode, std::mt19937_64&) const {
  check_load_arguments(*this, index, pixels);
  const std::span<const uint8_t> bytes = image(index);
  for (size_t i = 0; i < bytes.size(); ++i) pixels[i] = normalised_[bytes[i]];
  return labels_[static_cast<size_t>(index)];
}

std::span<const uint8_t> IdxDataset::image(int64_t index) const {
  check_index(*this, index);
  const size_t size = static_cast<size_t>(images_.rows) * static_cast<size_t>(images_.columns);
  return {images_.pixels.data() + static_cast<size_t>(index) * size, size};
}

int IdxDataset::label(int64_t index) const {
  check_index(*this, index);
  return labels_[static_cast<size_t>(index)];
}

}  // namespace glassbox
