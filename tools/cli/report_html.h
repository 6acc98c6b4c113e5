// tools/cli/report_html.h: the HTML page of `glassbox report`: one
// self-contained file (inline CSS and SVG, no script, nothing fetched) that a
// student can read at a glance:
//   - the run: network, device, batch(es) and the runtime's key/values;
//   - a sweep: images/s and peak memory against the batch (log2 x axis; log y
//     where the data span decades), failed batches marked with a cross;
//   - per-layer time as horizontal bars in graph order, stacked by pass;
//   - a roofline: achieved FLOP/s against FLOP/byte for every (layer, pass)
//     with FLOPs, under min(peak FLOP/s, intensity x peak bandwidth).
// A sweep shows its largest batch's time as a time file would be shown; a
// trace, its layer spans summed per layer and pass (and a roofline only if
// its spans carry both FLOPs and bytes).
#pragma once

#include <string>

#include "tools/cli/report_data.h"

namespace glassbox::cli {

struct ReportPage {
  std::string html;
  int charts = 0;  // <svg> elements in it
};

// `source` is the file the data came from, named on the page.
ReportPage report_html(const ReportData& data, const std::string& source);

}  // namespace glassbox::cli
