// data/tokenize.h: the rule that turns a text file into entries of word-level
// tokens, for language modelling (data/text_corpus.h). The rule defines the
// data: changing it changes every count, vocabulary and perplexity.
//
// Bytes, before tokenising (normalise_text):
//   - ASCII letters are lowercased; bytes >= 0x80 are kept as they are, so a
//     UTF-8 character stays whole inside its word (and is not lowercased).
//   - A backspace (0x08) erases the character before it on the same line:
//     fortune files overstrike with it ("_\bn" is an underlined n, "'\be" an
//     accented e), and what is left is what a terminal shows on top. A
//     character is one byte, or all the bytes of a whole UTF-8 sequence ("\xc3\xa9\b_"
//     leaves "_"), so a UTF-8 file gives UTF-8 words.
//   - A NUL byte means the file is not text: DataError naming file and offset.
//   - Every other control byte (BEL, tab, CR, ...) is whitespace.
// Tokens, within one line:
//   - A word is a maximal run of word bytes: a-z, 0-9 and bytes >= 0x80. An
//     apostrophe between two word bytes joins them ("don't", "o'clock"); any
//     other apostrophe is punctuation.
//   - Punctuation is every other printable ASCII byte. A run of one repeated
//     punctuation byte is one token ("...", "--", "!!"); different bytes are
//     separate tokens ("?!" is "?" "!"). Each punctuation mark is thus a word
//     of the vocabulary (the ". , --" of prose are among its most frequent
//     tokens), and a line of ASCII art does not flood the data with "-".
//   - Every line that has tokens ends with the token "<eos>" (as in Mikolov's
//     Penn Treebank files). '<' and '>' are punctuation, so no text ever
//     produces the tokens "<eos>" or "<unk>" themselves.
// Entries (split_entries):
//   - A file with at least one separator line (only "%", then optional
//     whitespace: fortune's format) holds entries separated by those lines.
//   - A file without one holds one entry per line (a plain text file, such as
//     Penn Treebank's, one sentence per line).
//   - Entries without tokens are left out: they do not count.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox {

inline constexpr std::string_view kEndOfLineWord = "<eos>";
inline constexpr std::string_view kUnknownWord = "<unk>";

// Rewrites `text` in place as above (lowercase, overstrikes resolved, control
// bytes made spaces). Throws DataError naming `file` and the byte offset (in
// the file as read) of a NUL byte.
void normalise_text(std::string& text, const std::string& file);

// The tokens of one normalised line (no '\n' in it), appended to `tokens`,
// without the "<eos>" that ends it. The views point into `line`.
void tokenize_line(std::string_view line, std::vector<std::string_view>& tokens);

// The entries of one normalised file: all their tokens (kEndOfLineWord after each
// line that has tokens) in `tokens`, and where each entry ends in `ends`
// (entry i is tokens[ends[i-1], ends[i]), ends[-1] taken as 0).
struct TextEntries {
  std::vector<std::string_view> tokens;
  std::vector<size_t> ends;
};
// Appends the entries of `text` to `entries`; the views point into `text`.
void split_entries(std::string_view text, TextEntries& entries);

// The tokens of `text` as strings, "<eos>" included, entries run together:
// normalise_text, then split_entries. For tests and for showing the rule.
std::vector<std::string> tokenize(std::string_view text);

}  // namespace glassbox
