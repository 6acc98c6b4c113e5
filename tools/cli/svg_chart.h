// tools/cli/svg_chart.h: charts as inline SVG text for the HTML report
// (tools/cli/report_html.h): axes on linear, log10 or log2 scales with ticks,
// grid lines and labelled units; points, lines, crosses and a legend; and a
// horizontal stacked bar chart. No JavaScript: a hover label is an SVG
// <title>. Every piece of text passes through escape().
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glassbox::cli::svg {

// Text for HTML or SVG: & < > " ' as entities.
std::string escape(std::string_view text);
// A number with SI prefixes and at most three significant digits:
// 1.5e11 -> "150G", 2048 -> "2.05k", 0.25 -> "0.25".
std::string si(double value);
// si() with a unit after a space: (3.1e11, "FLOP/s") -> "310 GFLOP/s".
std::string si(double value, const std::string& unit);

enum class ScaleKind { kLinear, kLog10, kLog2 };

// One axis: its label (with the unit), its kind and its domain.
struct Axis {
  std::string label;
  ScaleKind kind = ScaleKind::kLinear;
  double lo = 0.0;
  double hi = 1.0;
};
// An axis whose domain holds [data_lo, data_hi]: linear from 0 (or data_lo if
// negative) to a round number; log10 out to whole decades; log2 half a step
// beyond the data, so that points on the edge stay whole.
Axis fit_axis(std::string label, ScaleKind kind, double data_lo, double data_hi);
// Where the axis has ticks: round steps, decades (with 2 and 5 between them
// when there are few), powers of two (every other one when there are many).
std::vector<double> ticks(const Axis& axis);

struct LegendItem {
  std::string label;
  std::string color;
};

// A plot area with two axes; elements are added in data coordinates.
class Plot {
 public:
  Plot(int width, int height, Axis x, Axis y);

  double px(double x) const;  // data -> pixel
  double py(double y) const;
  bool contains(double x, double y) const;  // inside the domain (points outside are not drawn)

  // A polyline through `points`, data coordinates.
  void line(const std::vector<std::pair<double, double>>& points, const std::string& color, double width = 2.0);
  // A filled circle with a hover label: the plot's "point" elements.
  void point(double x, double y, const std::string& color, const std::string& title);
  // A cross on the bottom of the plot area at x: a failed measurement.
  void cross_at_bottom(double x, const std::string& color, const std::string& title);
  void text(double x, double y, const std::string& text, const std::string& css_class, const char* anchor = "start");
  void legend(const std::vector<LegendItem>& items);

  std::string str() const;

 private:
  int width_, height_;
  Axis x_, y_;
  double left_ = 80, right_ = 24, top_ = 20, bottom_ = 56;
  std::string body_;
  std::string legend_;
};

struct BarSegment {
  double value = 0.0;
  std::string color;
  std::string title;  // the hover label
};
struct BarRow {
  std::string label;
  std::string title;  // the label's hover text (its full name, type, shape)
  std::vector<BarSegment> segments;
};
// Horizontal bars, one row per entry from top to bottom, each a stack of
// segments, the total written after it; x from 0, labelled `x_label`.
std::string stacked_bars(const std::vector<BarRow>& rows, const std::string& x_label,
                         const std::vector<LegendItem>& legend, int width = 960);

}  // namespace glassbox::cli::svg
