// tests/fuzz/fuzz_report.cpp: `glassbox report`'s reader and page
// (tools/cli/report_data.h, report_html.h) on any bytes as the JSON file.
// Input: the file's contents. Seeds: corpus/fuzz_report/ (a time, a sweep
// and a trace file, as tests/data/report/, and a few broken ones).
//
// A DataError is the answer to a file that is not one of the three kinds.
// Invariants of an accepted file: the page is one document with as many
// <svg> elements as it says it has charts, and no text from the file
// reaches it unescaped (no "<script" can appear: the page has no script),
// and no coordinate is NaN or infinite (values too large to draw are refused).
#include <string>

#include "tests/fuzz/fuzz_input.h"
#include "tools/cli/report_data.h"
#include "tools/cli/report_html.h"

using namespace glassbox;

namespace {

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_errors([&] {
    const cli::ReportPage page = cli::report_html(cli::read_report_data(text, "f.json"), "f.json");
    FUZZ_CHECK(page.html.starts_with("<!DOCTYPE html>") && page.html.ends_with("</html>\n"));
    FUZZ_CHECK(count(page.html, "<svg") == page.charts && count(page.html, "</svg>") == page.charts);
    FUZZ_CHECK(count(page.html, "<script") == 0);
    for (const char* coordinate : {"=\"nan\"", "=\"-nan\"", "=\"inf\"", "=\"-inf\""}) {
      FUZZ_CHECK(count(page.html, coordinate) == 0);
    }
  });
  return 0;
}
