// tools/cli/report_html.cpp: the report's page (report_html.h), from the
// checked data (report_data.h) and the charts (svg_chart.h).
#include "tools/cli/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tensor/allocator.h"
#include "tools/cli/svg_chart.h"

namespace glassbox::cli {
namespace {

using svg::escape;
using svg::si;

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px 40px;
       color: #222; max-width: 1000px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #ccc; }
p.meta { color: #555; margin-top: 0; } p.note { color: #555; font-size: 14px; max-width: 900px; }
table { border-collapse: collapse; font-size: 14px; margin: 8px 0; }
td, th { padding: 3px 12px 3px 0; text-align: left; vertical-align: top; } th { color: #555; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } tr.failed td { color: #c0392b; }
figure { margin: 16px 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; fill: #222; }
.grid { stroke: #e4e4e4; } .tick { stroke: #555; } .frame { fill: none; stroke: #888; }
.ticklabel { font-size: 12px; fill: #444; } .axislabel { font-size: 13px; font-weight: 600; }
.legend, .barlabel, .bartotal { font-size: 12px; } .bartotal { fill: #555; } .stripe { fill: #f6f6f6; }
.failedlabel { font-size: 11px; fill: #c0392b; } .rooflabel { font-size: 12px; fill: #333; font-style: italic; }
)";

struct PassStyle {
  const char* pass;
  const char* color;
};
constexpr PassStyle kPasses[] = {{"forward", "#4e79a7"},
                                 {"backward", "#f28e2b"},
                                 {"backward-data", "#e15759"},
                                 {"backward-weights", "#edc948"},
                                 {"optimizer", "#59a14f"}};
constexpr const char* kOtherColors[] = {"#b07aa1", "#76b7b2", "#ff9da7", "#9c755f", "#bab0ac"};

std::string fmt(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string bytes_text(double bytes) {
  if (!(bytes >= 0.0 && bytes < 9e18)) return si(bytes, "bytes");  // not an int64_t's worth: no cast
  return format_bytes(static_cast<int64_t>(bytes));
}

// The passes in the layers: the known ones in their order, then any others
// as they first appear; each with its colour.
std::vector<svg::LegendItem> passes_of(const std::vector<LayerPasses>& layers) {
  std::vector<std::string> seen;
  for (const LayerPasses& l : layers) {
    for (const PassTime& p : l.passes) {
      if (std::find(seen.begin(), seen.end(), p.pass) == seen.end()) seen.push_back(p.pass);
    }
  }
  std::vector<svg::LegendItem> items;
  for (const PassStyle& s : kPasses) {
    if (std::find(seen.begin(), seen.end(), s.pass) != seen.end()) items.push_back({s.pass, s.color});
  }
  size_t other = 0;
  for (const std::string& pass : seen) {
    const bool known =
        std::any_of(std::begin(kPasses), std::end(kPasses), [&](const PassStyle& s) { return pass == s.pass; });
    if (!known) items.push_back({pass, kOtherColors[other++ % std::size(kOtherColors)]});
  }
  return items;
}

std::string color_of(const std::vector<svg::LegendItem>& passes, const std::string& pass) {
  for (const svg::LegendItem& item : passes) {
    if (item.label == pass) return item.color;
  }
  return "#999";
}

std::string figure(const std::string& caption, const std::string& chart, const std::string& note, int& charts) {
  ++charts;
  return "<figure><figcaption>" + escape(caption) + "</figcaption>\n" + chart +
         (note.empty() ? "" : "<p class=\"note\">" + escape(note) + "</p>\n") + "</figure>\n";
}

std::string key_values(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string s = "<table>\n";
  for (const auto& [key, value] : rows) s += "<tr><th>" + escape(key) + "</th><td>" + escape(value) + "</td></tr>\n";
  return s + "</table>\n";
}

std::string header_html(const RunHeader& h, const std::string& what, const std::string& batches,
                        const std::string& source) {
  const std::string network = h.network.empty() ? "(unnamed network)" : h.network;
  std::string device = h.device.empty() ? "unknown device" : h.device;
  if (!h.device_name.empty()) device += " (" + h.device_name + ")";
  std::string s = "<h1>" + escape(network) + ": " + escape(what) + "</h1>\n<p class=\"meta\">on " + escape(device) +
                  ", " + escape(batches) + ", from " + escape(source) + "</p>\n";
  if (!h.runtime.empty()) s += "<h2>Runtime</h2>\n" + key_values(h.runtime);
  return s;
}

std::string layer_bars(const std::vector<LayerPasses>& layers, const std::string& per, int& charts) {
  const std::vector<svg::LegendItem> passes = passes_of(layers);
  std::vector<svg::BarRow> rows;
  for (const LayerPasses& l : layers) {
    svg::BarRow row{.label = l.name, .title = l.name};
    if (!l.type.empty()) row.title += " (" + l.type + ")";
    if (!l.output.empty()) row.title += " -> " + l.output;
    for (const svg::LegendItem& item : passes) {  // stacked in the legend's order
      for (const PassTime& p : l.passes) {
        if (p.pass != item.label) continue;
        row.segments.push_back({p.ms, item.color, l.name + " " + p.pass + ": " + fmt(p.ms, 3) + " ms"});
      }
    }
    rows.push_back(std::move(row));
  }
  return figure("Time per layer" + per, svg::stacked_bars(rows, "time (ms)", passes),
                "One bar per layer, top to bottom in the order the network runs them, split by pass; the number "
                "after a bar is its total in ms. Hover over a bar or a name for the exact figures.",
                charts);
}

// The roofline of `layers` under the given peaks (0: no roof drawn).
std::string roofline(const std::vector<LayerPasses>& layers, double peak_flops, double peak_bw,
                     const std::string& peak_source, int& charts) {
  struct Pt {
    double x, y;
    std::string color, title;
  };
  const std::vector<svg::LegendItem> passes = passes_of(layers);
  std::vector<Pt> points;
  int skipped = 0;
  for (const LayerPasses& l : layers) {
    for (const PassTime& p : l.passes) {
      if (p.flops <= 0) continue;
      if (p.bytes <= 0 || p.ms <= 0) {
        ++skipped;
        continue;
      }
      const double x = p.flops / p.bytes, y = p.flops / (p.ms / 1e3);
      if (!std::isfinite(x) || !std::isfinite(y) || x <= 0 || y <= 0) {
        ++skipped;
        continue;
      }
      points.push_back({x, y, color_of(passes, p.pass),
                        l.name + " " + p.pass + ": " + si(y, "FLOP/s") + " at " + si(x, "FLOP/byte") + " (" +
                            si(p.flops, "FLOP") + ", " + si(p.bytes, "bytes") + ", " + fmt(p.ms, 3) + " ms)"});
    }
  }
  if (points.empty()) return "";
  const bool roof = peak_flops > 0 && peak_bw > 0 && std::isfinite(peak_flops / peak_bw) && peak_flops / peak_bw > 0;
  const double ridge = roof ? peak_flops / peak_bw : points.front().x;
  double xlo = ridge, xhi = ridge, ylo = roof ? peak_flops : points.front().y, yhi = ylo;
  for (const Pt& p : points) {
    xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x), ylo = std::min(ylo, p.y), yhi = std::max(yhi, p.y);
  }
  svg::Plot plot(960, 520,
                 svg::fit_axis("arithmetic intensity (FLOP/byte, log scale)", svg::ScaleKind::kLog10, xlo, xhi),
                 svg::fit_axis("achieved FLOP/s (log scale)", svg::ScaleKind::kLog10, ylo, yhi * 1.5));
  if (roof) {
    const svg::Axis x = svg::fit_axis("", svg::ScaleKind::kLog10, xlo, xhi);
    const svg::Axis y = svg::fit_axis("", svg::ScaleKind::kLog10, ylo, yhi * 1.5);
    const double start = std::max(x.lo, y.lo / peak_bw);  // where the slope enters the plot
    plot.line({{start, std::min(peak_flops, start * peak_bw)}, {ridge, peak_flops}, {x.hi, peak_flops}}, "#555", 2.0);
    plot.text(x.hi, peak_flops * 1.12, "peak " + si(peak_flops, "FLOP/s"), "rooflabel", "end");
    const double along = std::max(start * 2.0, ridge / 8.0);  // a point on the slope, left of the ridge
    if (along < ridge)
      plot.text(along, along * peak_bw * 1.25, "bandwidth " + si(peak_bw, "B/s") + " ", "rooflabel", "end");
  }
  for (const Pt& p : points) plot.point(p.x, p.y, p.color, p.title);
  std::vector<svg::LegendItem> drawn;  // the passes that have points
  for (const svg::LegendItem& item : passes) {
    if (std::any_of(points.begin(), points.end(), [&](const Pt& p) { return p.color == item.color; }))
      drawn.push_back(item);
  }
  plot.legend(drawn);
  std::string note =
      "One point per layer and pass that does arithmetic. x: FLOPs per byte moved; y: FLOPs per second achieved. ";
  note += roof ? "The grey line is the roofline, min(peak FLOP/s, intensity x peak bandwidth): a point under its "
                 "slanted part is limited by memory bandwidth, under its flat part by arithmetic; the closer to the "
                 "line, the better the layer uses the machine. Peak: " +
                     (peak_source.empty() ? std::string("as given") : peak_source) + "."
               : "The file gives no peak, so no roofline is drawn.";
  if (skipped > 0) note += " " + std::to_string(skipped) + " with FLOPs but no bytes or no time are not drawn.";
  note += " Hover over a point for its layer and pass.";
  return figure("Roofline: achieved FLOP/s against arithmetic intensity", plot.str(), note, charts);
}

std::string time_body(const TimeData& t, int& charts) {
  std::vector<std::pair<std::string, std::string>> rows;
  if (t.step_ms > 0)
    rows.push_back({t.inference ? "inference step" : "training step",
                    fmt(t.step_ms, 3) + " ms (mean of " + std::to_string(t.steps) + " steps)"});
  if (t.items_per_s > 0) rows.push_back({"throughput", fmt(t.items_per_s, 1) + " " + t.item + "/s"});
  if (t.peak_flops_per_s > 0) rows.push_back({"peak arithmetic", si(t.peak_flops_per_s, "FLOP/s")});
  if (t.peak_bytes_per_s > 0) rows.push_back({"peak memory bandwidth", si(t.peak_bytes_per_s, "B/s")});
  if (!t.peak_source.empty()) rows.push_back({"peaks from", t.peak_source});
  for (const auto& [key, bytes] : t.memory) {
    std::string name = key;  // "optimizer_state" -> "optimizer state"
    std::replace(name.begin(), name.end(), '_', ' ');
    rows.push_back({"memory: " + name, bytes_text(bytes)});
  }
  std::string s = "<h2>Step</h2>\n" + key_values(rows);
  s += layer_bars(t.layers, t.inference ? " (ms per inference step)" : " (ms per training step)", charts);
  s += roofline(t.layers, t.peak_flops_per_s, t.peak_bytes_per_s, t.peak_source, charts);
  return s;
}

// A chart of one sweep quantity against the batch; failed batches as crosses.
std::string sweep_chart(const SweepData& s, const std::string& y_label, double scale,
                        double (*value)(const SweepPoint&)) {
  double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  bool first = true;
  for (const SweepPoint& p : s.points) {
    if (p.batch < 1) continue;  // not on a log axis (the table lists it)
    const double y = p.error.empty() ? value(p) / scale : 0.0;
    xlo = first ? p.batch : std::min(xlo, static_cast<double>(p.batch));
    xhi = first ? p.batch : std::max(xhi, static_cast<double>(p.batch));
    if (p.error.empty() && y > 0) {
      ylo = ylo == 0 ? y : std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
    first = false;
  }
  const bool log_y = ylo > 0 && yhi / ylo >= 10.0;  // the data span a decade or more
  svg::Plot plot(
      960, 380,
      svg::fit_axis(s.item == "tokens" ? "batch size (sequences, log2 scale)" : "batch size (images, log2 scale)",
                    svg::ScaleKind::kLog2, xlo, xhi),
      svg::fit_axis(log_y ? y_label.substr(0, y_label.size() - 1) + ", log scale)" : y_label,
                    log_y ? svg::ScaleKind::kLog10 : svg::ScaleKind::kLinear, log_y ? ylo : 0.0, yhi > 0 ? yhi : 1.0));
  std::vector<std::pair<double, double>> line;
  for (const SweepPoint& p : s.points) {
    if (p.batch >= 1 && p.error.empty() && value(p) > 0)
      line.push_back({static_cast<double>(p.batch), value(p) / scale});
  }
  if (line.size() > 1) plot.line(line, "#4e79a7");
  for (const SweepPoint& p : s.points) {
    if (p.batch < 1) continue;
    if (!p.error.empty()) {
      plot.cross_at_bottom(static_cast<double>(p.batch), "#c0392b",
                           "batch " + std::to_string(p.batch) + ": " + p.error);
    } else if (value(p) > 0) {
      plot.point(static_cast<double>(p.batch), value(p) / scale, "#4e79a7",
                 "batch " + std::to_string(p.batch) + ": " + si(value(p) / scale) + " " + y_label);
    }
  }
  std::vector<svg::LegendItem> legend = {{"measured", "#4e79a7"}};
  if (std::any_of(s.points.begin(), s.points.end(), [](const SweepPoint& p) { return !p.error.empty(); })) {
    legend.push_back({"failed (cross; hover for why)", "#c0392b"});
  }
  plot.legend(legend);
  return plot.str();
}

std::string sweep_body(const SweepData& s, int& charts) {
  std::string table =
      "<h2>Batches</h2>\n<table>\n<tr><th>batch</th><th>step (ms)</th><th>" + s.item +
      "/s</th><th>peak memory</th><th></th></tr>\n";
  double most = 0;
  for (const SweepPoint& p : s.points) {
    if (p.error.empty()) {
      most = std::max(most, p.peak_bytes);
      table += "<tr><td class=\"num\">" + std::to_string(p.batch) + "</td><td class=\"num\">" + fmt(p.step_ms, 2) +
               "</td><td class=\"num\">" + fmt(p.items_per_s, 1) + "</td><td class=\"num\">" +
               bytes_text(p.peak_bytes) + "</td><td></td></tr>\n";
    } else {
      table += "<tr class=\"failed\"><td class=\"num\">" + std::to_string(p.batch) +
               "</td><td></td><td></td><td></td><td>failed: " + escape(p.error) + "</td></tr>\n";
    }
  }
  table += "</table>\n";
  const struct {
    double scale;
    const char* unit;
  } units[] = {{1024.0 * 1024 * 1024, "GiB"}, {1024.0 * 1024, "MiB"}, {1024.0, "KiB"}, {1.0, "bytes"}};
  const auto& unit = *std::find_if(std::begin(units), std::end(units),
                                   [&](const auto& u) { return most >= u.scale || u.scale == 1.0; });
  std::string out = table;
  out += figure("Throughput against batch size",
                sweep_chart(s, "throughput (" + s.item + "/s)", 1.0, [](const SweepPoint& p) { return p.items_per_s; }),
                (s.item == "tokens" ? "Tokens" : "Images") +
                    std::string(" per second of a training step at each batch size. A curve that flattens means a "
                                "larger batch no longer keeps the device busier."),
                charts);
  out += figure("Peak memory against batch size",
                sweep_chart(s, std::string("peak memory (") + unit.unit + ")", unit.scale,
                            [](const SweepPoint& p) { return p.peak_bytes; }),
                "The allocator's peak during a training step. Activations grow with the batch; parameters, "
                "gradients and optimizer state do not.",
                charts);
  if (s.largest) {
    out += "<h2>The largest batch that fitted: " + std::to_string(s.largest->header.batch) + "</h2>\n";
    out += time_body(*s.largest, charts);
  }
  return out;
}

std::string trace_body(const TraceData& t, int& charts) {
  std::vector<std::pair<std::string, std::string>> rows;
  rows.push_back({"layer spans", std::to_string(t.layer_spans) + " over " + std::to_string(t.steps) +
                                     (t.steps == 1 ? " step" : " steps (times below are the mean per step)")});
  if (t.step_ms > 0) rows.push_back({"training step", fmt(t.step_ms, 3) + " ms"});
  std::vector<std::pair<std::string, double>> per_pass;
  double total = 0.0;
  for (const svg::LegendItem& item : passes_of(t.layers)) {
    double ms = 0.0;
    for (const LayerPasses& l : t.layers) {
      for (const PassTime& p : l.passes) ms += p.pass == item.label ? p.ms : 0.0;
    }
    per_pass.push_back({item.label, ms});
    total += ms;
  }
  for (const auto& [pass, ms] : per_pass) {
    rows.push_back({pass, fmt(ms, 3) + " ms" + (total > 0 ? " (" + fmt(100.0 * ms / total, 1) + "%)" : "")});
  }
  rows.push_back({"sum of layer spans", fmt(total, 3) + " ms"});
  if (t.kernel_events > 0) {
    rows.push_back({"GPU kernels", std::to_string(t.kernel_events) + (t.kernel_events == 1 ? " event, " : " events, ") +
                                       fmt(t.kernel_ms, 3) + " ms per step"});
  }
  if (t.copy_events > 0) {
    rows.push_back({"GPU copies and sets", std::to_string(t.copy_events) +
                                               (t.copy_events == 1 ? " event, " : " events, ") + fmt(t.copy_ms, 3) +
                                               " ms per step"});
  }
  std::string s = "<h2>Summary</h2>\n" + key_values(rows);
  s += layer_bars(t.layers, t.steps > 1 ? " (ms, mean per step)" : " (ms)", charts);
  if (t.has_flops_and_bytes) s += roofline(t.layers, 0.0, 0.0, "", charts);
  return s;
}

}  // namespace

ReportPage report_html(const ReportData& data, const std::string& source) {
  ReportPage page;
  std::string title, body;
  if (data.time) {
    const RunHeader& h = data.time->header;
    body = header_html(h, "time per layer", "batch " + std::to_string(h.batch), source) +
           time_body(*data.time, page.charts);
    title = h.network + " time, batch " + std::to_string(h.batch);
  } else if (data.sweep) {
    const SweepData& s = *data.sweep;
    std::string batches;
    for (const SweepPoint& p : s.points) batches += (batches.empty() ? "" : ", ") + std::to_string(p.batch);
    body = header_html(s.header, "batch size sweep", "batches " + batches, source) + sweep_body(s, page.charts);
    title = s.header.network + " batch sweep";
  } else if (data.trace) {
    const RunHeader& h = data.trace->header;
    body =
        header_html(h, "trace summary", h.batch > 0 ? "batch " + std::to_string(h.batch) : "batch not given", source) +
        trace_body(*data.trace, page.charts);
    title = h.network + " trace";
  }
  page.html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>Glassbox: " + escape(title) +
      "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n" + body +
      "<p class=\"note\">Made by glassbox report.</p>\n</body>\n</html>\n";
  return page;
}

}  // namespace glassbox::cli
