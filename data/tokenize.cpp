// data/tokenize.cpp: one pass over the bytes to normalise them, one to find the
// lines and cut them into tokens; no allocation per token (the tokens are
// views into the file's own buffer).
#include "data/tokenize.h"

#include <cstdint>

#include "data/shared.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80 || (c >= 'A' && c <= 'Z');
}

// After normalise_text every control byte but '\n' is a space already; the
// test here also makes tokenize_line safe on text that was not normalised.
bool is_space(unsigned char c) { return c <= ' ' || c == 0x7f; }

// A line of only "%" and then whitespace: fortune's entry separator.
bool is_separator(std::string_view line) {
  if (line.empty() || line[0] != '%') return false;
  for (size_t i = 1; i < line.size(); ++i) {
    if (!is_space(static_cast<unsigned char>(line[i]))) return false;
  }
  return true;
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The bytes a UTF-8 sequence that starts with `c` has; 0 for a byte that
// starts none (ASCII is a sequence of 1).
size_t sequence_length(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x80 ? 1 : (byte & 0xE0) == 0xC0 ? 2 : (byte & 0xF0) == 0xE0 ? 3 : (byte & 0xF8) == 0xF0 ? 4 : 0;
}

// Where the last character of text[0, end) starts: the lead byte of the
// UTF-8 sequence that ends at `end`, where a whole one does; else end - 1
// (any other byte is a character of its own). end > 0.
size_t start_of_last_character(const std::string& text, size_t end) {
  size_t lead = end - 1;
  while (lead > 0 && is_continuation(text[lead]) && end - lead < 4) --lead;
  return sequence_length(text[lead]) == end - lead ? lead : end - 1;
}

// Calls f(line) for each line of `text` ('\n' not included; a last line
// without '\n' counts).
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    f(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

void normalise_text(std::string& text, const std::string& file) {
  size_t out = 0;
  for (size_t in = 0; in < text.size(); ++in) {
    const auto c = static_cast<unsigned char>(text[in]);
    if (c == 0) {
      throw DataError(cat(file, ": byte ", grouped(static_cast<int64_t>(in)),
                          " is a NUL byte: not a text file (text corpora are read as plain text, one entry per "
                          "\"%\" line or per line)"));
    }
    if (c == '\b') {
      // Note [Overstrike]: "_\bn" prints n over an underscore; the byte
      // written last is what shows, so the character before the backspace
      // goes. A terminal backs up one column, not one byte: erasing one byte
      // of "\xc3\xa9" would leave half a UTF-8 sequence in a word.
      if (out > 0 && text[out - 1] != '\n') out = start_of_last_character(text, out);
      continue;
    }
    if (c >= 'A' && c <= 'Z') {
      text[out++] = static_cast<char>(c - 'A' + 'a');
    } else if ((c < ' ' && c != '\n') || c == 0x7f) {
      text[out++] = ' ';
    } else {
      text[out++] = static_cast<char>(c);
    }
  }
  text.resize(out);
}

void tokenize_line(std::string_view line, std::vector<std::string_view>& tokens) {
  const size_t n = line.size();
  auto byte = [&](size_t i) { return static_cast<unsigned char>(line[i]); };
  size_t i = 0;
  while (i < n) {
    const unsigned char c = byte(i);
    if (is_space(c)) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    if (is_word_byte(c)) {
      while (j < n) {
        if (is_word_byte(byte(j))) {
          ++j;
        } else if (line[j] == '\'' && j + 1 < n && is_word_byte(byte(j + 1))) {
          j += 2;  // the apostrophe inside a word, and the word byte after it
        } else {
          break;
        }
      }
    } else {
      while (j < n && byte(j) == c) ++j;
    }
    tokens.push_back(line.substr(i, j - i));
    i = j;
  }
}

void split_entries(std::string_view text, TextEntries& entries) {
  bool fortune_format = false;
  for_each_line(text, [&](std::string_view line) { fortune_format = fortune_format || is_separator(line); });
  size_t entry_start = entries.tokens.size();
  auto end_entry = [&] {
    if (entries.tokens.size() > entry_start) entries.ends.push_back(entries.tokens.size());
    entry_start = entries.tokens.size();
  };
  for_each_line(text, [&](std::string_view line) {
    if (fortune_format && is_separator(line)) {
      end_entry();
      return;
    }
    const size_t before = entries.tokens.size();
    tokenize_line(line, entries.tokens);
    if (entries.tokens.size() > before) entries.tokens.push_back(kEndOfLineWord);
    if (!fortune_format) end_entry();
  });
  end_entry();
}

std::vector<std::string> tokenize(std::string_view text) {
  std::string normalised(text);
  normalise_text(normalised, "text");
  TextEntries entries;
  split_entries(normalised, entries);
  return {entries.tokens.begin(), entries.tokens.end()};
}

}  // namespace glassbox
