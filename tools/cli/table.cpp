// tools/cli/table.cpp
#include "tools/cli/table.h"

#include <algorithm>
#include <cstdio>

namespace glassbox::cli {

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void Table::add_rule() { rows_.emplace_back(); }

std::string Table::str() const {
  std::vector<size_t> widths;
  for (const Column& c : columns_) widths.push_back(c.title.size());
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string& cell = cells[i];
      const std::string pad(widths[i] - cell.size(), ' ');
      out += columns_[i].align == Align::kRight ? pad + cell : cell + pad;
      if (i + 1 < columns_.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  auto rule = [&] {
    std::vector<std::string> dashes;
    for (size_t w : widths) dashes.emplace_back(w, '-');
    return line(dashes);
  };
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  std::string out = line(titles) + rule();
  for (const auto& row : rows_) out += row.empty() ? rule() : line(row);
  return out;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace glassbox::cli
