// tools/cli/table.h: a plain-text table for reports: columns padded to their
// widest cell, numbers right-aligned, a rule under the header.
#pragma once

#include <string>
#include <vector>

#include "tensor/grouped.h"  // grouped(138357544) -> "138,357,544", for the tables' totals

namespace glassbox::cli {

class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add_row(std::vector<std::string> cells);  // fewer cells than columns leave the rest empty
  void add_rule();                               // a line of dashes, e.g. before totals
  std::string str() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

// Fixed-point with `digits` decimals: fixed(3.14159, 2) -> "3.14".
std::string fixed(double value, int digits);

}  // namespace glassbox::cli
