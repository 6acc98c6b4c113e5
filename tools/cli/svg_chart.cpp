// tools/cli/svg_chart.cpp: SVG axes, ticks, points, lines and bars (svg_chart.h).
#include "tools/cli/svg_chart.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "tensor/error.h"

namespace glassbox::cli::svg {
namespace {

constexpr int kTickLength = 5;
constexpr double kCharWidth = 7.0;  // of the 12px sans-serif labels, on average, for sizing margins

std::string num(double v) {  // a coordinate
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

double to_unit(const Axis& a, double v) {  // [lo, hi] -> [0, 1]
  switch (a.kind) {
    case ScaleKind::kLinear:
      return (v - a.lo) / (a.hi - a.lo);
    case ScaleKind::kLog10:
    case ScaleKind::kLog2:
      return (std::log(v) - std::log(a.lo)) / (std::log(a.hi) - std::log(a.lo));
  }
  return 0.0;
}

double nice_step(double range, int target) {
  const double raw = range / target;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * decade >= raw) return m * decade;
  }
  return 10.0 * decade;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string si(double value) {
  if (!std::isfinite(value)) return "-";
  const double magnitude = std::fabs(value);
  static const struct {
    double scale;
    const char* prefix;
  } kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  char buffer[32];
  for (const auto& p : kPrefixes) {
    if (magnitude >= p.scale) {
      std::snprintf(buffer, sizeof buffer, "%.3g%s", value / p.scale, p.prefix);
      return buffer;
    }
  }
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string si(double value, const std::string& unit) {
  std::string number = si(value);
  const bool prefixed = !number.empty() && std::isalpha(static_cast<unsigned char>(number.back()));
  if (prefixed) return number.substr(0, number.size() - 1) + " " + number.back() + unit;
  return number + " " + unit;
}

Axis fit_axis(std::string label, ScaleKind kind, double data_lo, double data_hi) {
  // A sum of values near DBL_MAX (bars stacked) is infinite: such a file is
  // refused, where drawing it would write NaN coordinates into the page.
  if (!std::isfinite(data_lo) || !std::isfinite(data_hi) || !std::isfinite(std::fabs(data_hi - data_lo) * 2.0)) {
    throw DataError(cat("the values of the chart's axis '", label, "' (", data_lo, " to ", data_hi,
                        ") are too large to draw"));
  }
  Axis a{.label = std::move(label), .kind = kind};
  if (kind == ScaleKind::kLinear) {
    a.lo = std::min(0.0, data_lo);
    const double hi = data_hi > a.lo ? data_hi : a.lo + 1.0;
    const double step = nice_step((hi - a.lo) * 1.05, 5);
    a.hi = std::ceil(hi * 1.05 / step) * step;
    if (a.lo < 0) a.lo = std::floor(a.lo * 1.05 / step) * step;
    return a;
  }
  data_lo = data_lo > 0 ? data_lo : 1.0;
  data_hi = std::max(data_hi, data_lo);
  if (kind == ScaleKind::kLog10) {
    a.lo = std::pow(10.0, std::floor(std::log10(data_lo)));
    a.hi = std::pow(10.0, std::ceil(std::log10(data_hi)));
    if (a.hi <= a.lo) a.hi = a.lo * 10.0;
  } else {
    a.lo = std::pow(2.0, std::floor(std::log2(data_lo)) - 0.5);
    a.hi = std::pow(2.0, std::ceil(std::log2(data_hi)) + 0.5);
  }
  return a;
}

std::vector<double> ticks(const Axis& a) {
  std::vector<double> out;
  if (a.kind == ScaleKind::kLinear) {
    const double step = nice_step(a.hi - a.lo, 5);
    if (!(std::isfinite(step) && step > 0 && std::isfinite(a.lo) && std::isfinite(a.hi))) return out;
    for (double v = std::ceil(a.lo / step) * step; v <= a.hi + step * 1e-9; v += step) {
      out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    }
    return out;
  }
  const double base = a.kind == ScaleKind::kLog10 ? 10.0 : 2.0;
  const double first_power = std::ceil(std::log(a.lo) / std::log(base) - 1e-9);
  const double last_power = std::floor(std::log(a.hi) / std::log(base) + 1e-9);
  if (!(std::isfinite(first_power) && std::isfinite(last_power) && last_power - first_power <= 2100)) return out;
  const int first = static_cast<int>(first_power), last = static_cast<int>(last_power);
  const int every = a.kind == ScaleKind::kLog2 && last - first > 12 ? 2 : 1;
  const bool minor = a.kind == ScaleKind::kLog10 && last - first <= 2;
  for (int k = first; k <= last; k += every) {
    const double v = std::pow(base, k);
    out.push_back(v);
    if (minor && k < last) {
      out.push_back(2.0 * v);
      out.push_back(5.0 * v);
    }
  }
  return out;
}

Plot::Plot(int width, int height, Axis x, Axis y)
    : width_(width), height_(height), x_(std::move(x)), y_(std::move(y)) {}

double Plot::px(double x) const { return left_ + to_unit(x_, x) * (width_ - left_ - right_); }
double Plot::py(double y) const { return height_ - bottom_ - to_unit(y_, y) * (height_ - top_ - bottom_); }

bool Plot::contains(double x, double y) const {
  const auto in = [](const Axis& a, double v) {
    return std::isfinite(v) && v >= a.lo && v <= a.hi && (a.kind == ScaleKind::kLinear || v > 0);
  };
  return in(x_, x) && in(y_, y);
}

void Plot::line(const std::vector<std::pair<double, double>>& points, const std::string& color, double width) {
  std::string d;
  for (const auto& [x, y] : points) {
    if (!d.empty()) d += ' ';
    d += num(px(x));
    d += ',';
    d += num(py(y));
  }
  body_ +=
      "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"" + num(width) + "\" points=\"" + d + "\"/>\n";
}

void Plot::point(double x, double y, const std::string& color, const std::string& title) {
  body_ += "<circle class=\"pt\" cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"5\" fill=\"" + color +
           "\"><title>" + escape(title) + "</title></circle>\n";
}

void Plot::cross_at_bottom(double x, const std::string& color, const std::string& title) {
  const double cx = px(x), cy = height_ - bottom_ - 10;
  body_ += "<path class=\"failed\" d=\"M" + num(cx - 6) + "," + num(cy - 6) + " L" + num(cx + 6) + "," + num(cy + 6) +
           " M" + num(cx - 6) + "," + num(cy + 6) + " L" + num(cx + 6) + "," + num(cy - 6) + "\" stroke=\"" + color +
           "\" stroke-width=\"3\"><title>" + escape(title) + "</title></path>\n" + "<text class=\"failedlabel\" x=\"" +
           num(cx) + "\" y=\"" + num(cy - 12) + "\" text-anchor=\"middle\">failed</text>\n";
}

void Plot::text(double x, double y, const std::string& text, const std::string& css_class, const char* anchor) {
  body_ += "<text class=\"" + css_class + "\" x=\"" + num(px(x)) + "\" y=\"" + num(py(y)) + "\" text-anchor=\"" +
           anchor + "\">" + escape(text) + "</text>\n";
}

void Plot::legend(const std::vector<LegendItem>& items) {
  double x = left_ + 10;
  for (const LegendItem& item : items) {
    legend_ += "<rect x=\"" + num(x) + "\" y=\"" + num(top_ + 6) + "\" width=\"12\" height=\"12\" fill=\"" +
               item.color + "\"/><text class=\"legend\" x=\"" + num(x + 16) + "\" y=\"" + num(top_ + 16) + "\">" +
               escape(item.label) + "</text>\n";
    x += 16 + kCharWidth * static_cast<double>(item.label.size()) + 18;
  }
}

std::string Plot::str() const {
  const double x0 = left_, x1 = width_ - right_, y0 = height_ - bottom_, y1 = top_;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width_) + "\" height=\"" +
                  std::to_string(height_) + "\" viewBox=\"0 0 " + std::to_string(width_) + " " +
                  std::to_string(height_) + "\">\n";
  for (double t : ticks(x_)) {
    const double x = px(t);
    s += "<line class=\"grid\" x1=\"" + num(x) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x) + "\" y2=\"" + num(y1) +
         "\"/><line class=\"tick\" x1=\"" + num(x) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(y0 + kTickLength) + "\"/><text class=\"ticklabel\" x=\"" + num(x) + "\" y=\"" + num(y0 + 18) +
         "\" text-anchor=\"middle\">" + escape(si(t)) + "</text>\n";
  }
  for (double t : ticks(y_)) {
    const double y = py(t);
    s += "<line class=\"grid\" x1=\"" + num(x0) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x1) + "\" y2=\"" + num(y) +
         "\"/><line class=\"tick\" x1=\"" + num(x0 - kTickLength) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x0) +
         "\" y2=\"" + num(y) + "\"/><text class=\"ticklabel\" x=\"" + num(x0 - 8) + "\" y=\"" + num(y + 4) +
         "\" text-anchor=\"end\">" + escape(si(t)) + "</text>\n";
  }
  s += "<rect class=\"frame\" x=\"" + num(x0) + "\" y=\"" + num(y1) + "\" width=\"" + num(x1 - x0) + "\" height=\"" +
       num(y0 - y1) + "\"/>\n";
  s += "<text class=\"axislabel\" x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(height_ - 12.0) +
       "\" text-anchor=\"middle\">" + escape(x_.label) + "</text>\n";
  s += "<text class=\"axislabel\" transform=\"translate(18," + num((y0 + y1) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_.label) + "</text>\n";
  s += body_ + legend_ + "</svg>\n";
  return s;
}

std::string stacked_bars(const std::vector<BarRow>& rows, const std::string& x_label,
                         const std::vector<LegendItem>& legend, int width) {
  constexpr double kRow = 18.0, kTop = 40.0, kBottom = 56.0, kRight = 70.0;
  double longest = 0.0, largest = 0.0;
  for (const BarRow& row : rows) {
    longest = std::max(longest, static_cast<double>(row.label.size()));
    double total = 0.0;
    for (const BarSegment& seg : row.segments) total += std::max(0.0, seg.value);
    largest = std::max(largest, total);
  }
  const double left = std::clamp(longest * kCharWidth + 16.0, 60.0, 0.45 * width);
  const int height = static_cast<int>(kTop + kBottom + kRow * static_cast<double>(rows.size()));
  const Axis x = fit_axis(x_label, ScaleKind::kLinear, 0.0, largest > 0 ? largest : 1.0);
  const double x0 = left, x1 = width - kRight, y0 = height - kBottom;
  const auto px = [&](double v) { return x0 + (v - x.lo) / (x.hi - x.lo) * (x1 - x0); };

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                  std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
                  "\">\n";
  for (double t : ticks(x)) {
    s += "<line class=\"grid\" x1=\"" + num(px(t)) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(px(t)) + "\" y2=\"" +
         num(y0) + "\"/><text class=\"ticklabel\" x=\"" + num(px(t)) + "\" y=\"" + num(y0 + 18) +
         "\" text-anchor=\"middle\">" + escape(si(t)) + "</text>\n";
    if (rows.size() > 30) {  // a tall chart: the scale at the top too
      s += "<text class=\"ticklabel\" x=\"" + num(px(t)) + "\" y=\"" + num(kTop - 4) + "\" text-anchor=\"middle\">" +
           escape(si(t)) + "</text>\n";
    }
  }
  // Long names keep their start (the block they belong to) and lose their end.
  const size_t fits = static_cast<size_t>((left - 16.0) / kCharWidth);
  for (size_t i = 0; i < rows.size(); ++i) {
    const BarRow& row = rows[i];
    const double y = kTop + kRow * static_cast<double>(i);
    if (i % 2 == 1) {
      s += "<rect class=\"stripe\" x=\"0\" y=\"" + num(y) + "\" width=\"" + num(x1) + "\" height=\"" + num(kRow) +
           "\"/>\n";
    }
    const std::string label = row.label.size() > fits ? row.label.substr(0, fits - 1) + "\u2026" : row.label;
    s += "<text class=\"barlabel\" x=\"" + num(x0 - 8) + "\" y=\"" + num(y + kRow - 5) + "\" text-anchor=\"end\">" +
         escape(label) + "<title>" + escape(row.title) + "</title></text>\n";
    double at = 0.0;
    for (const BarSegment& seg : row.segments) {
      if (seg.value <= 0) continue;
      s += "<rect class=\"bar\" x=\"" + num(px(at)) + "\" y=\"" + num(y + 3) + "\" width=\"" +
           num(px(at + seg.value) - px(at)) + "\" height=\"" + num(kRow - 6) + "\" fill=\"" + seg.color + "\"><title>" +
           escape(seg.title) + "</title></rect>\n";
      at += seg.value;
    }
    s += "<text class=\"bartotal\" x=\"" + num(px(at) + 4) + "\" y=\"" + num(y + kRow - 5) + "\">" + escape(si(at)) +
         "</text>\n";
  }
  s += "<line class=\"tick\" x1=\"" + num(x0) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x0) + "\" y2=\"" + num(y0) +
       "\"/><line class=\"tick\" x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x1) + "\" y2=\"" + num(y0) +
       "\"/>\n";
  s += "<text class=\"axislabel\" x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(height - 12.0) +
       "\" text-anchor=\"middle\">" + escape(x_label) + "</text>\n";
  double lx = x0;
  for (const LegendItem& item : legend) {
    s += "<rect x=\"" + num(lx) + "\" y=\"12\" width=\"12\" height=\"12\" fill=\"" + item.color +
         "\"/><text class=\"legend\" x=\"" + num(lx + 16) + "\" y=\"22\">" + escape(item.label) + "</text>\n";
    lx += 16 + kCharWidth * static_cast<double>(item.label.size()) + 18;
  }
  return s + "</svg>\n";
}

}  // namespace glassbox::cli::svg
