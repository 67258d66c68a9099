// Line charts as SVG 1.1, for the benchmark reports (`bench serve --plot`,
// `bench --plot`): a grid of charts under one title, each with linear axes
// (ticks at 1/2/5 x 10^k), axis labels with units, a legend, and one
// polyline plus point markers per series. Every marker carries its numbers
// as attributes (data-series, data-x, data-y, data-label) so a test can parse
// the picture and compare it with the JSON the numbers came from. All text
// is XML-escaped (model names come from servers). No dependencies.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {

struct PlotSeries {
  std::string name;                             // legend entry
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  std::vector<std::string> labels;              // optional, one per point (e.g. "c=4"), shown next to it
  bool line = true;                             // join the points
};

struct PlotChart {
  std::string title;
  std::string x_label;  // with the unit, e.g. "output tokens/s"
  std::string y_label;  // with the unit, e.g. "TTFT (ms)"
  std::vector<PlotSeries> series;
};

// One SVG document: `title` on top, `charts` in rows of `columns`.
std::string render_svg(const std::string& title, const std::vector<PlotChart>& charts, int columns = 2);

// An HTML page around the SVG (for --plot FILE.html).
std::string wrap_html(const std::string& title, const std::string& svg);

// Writes render_svg(title, charts, columns) (FILE.svg) or wrap_html() (FILE.html) to `path`;
// false when the file cannot be written or has another extension.
bool write_plot(const std::string& path, const std::string& title, const std::vector<PlotChart>& charts,
                std::string* error, int columns = 2);

// Whether `path` names a file write_plot() writes (.svg, .html or .htm).
bool plot_path_ok(const std::string& path);

// "&lt;" etc. for &, <, >, ", '.
std::string xml_escape(const std::string& text);

}  // namespace tessera::cli
