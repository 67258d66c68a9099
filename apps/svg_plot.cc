#include "svg_plot.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

namespace tessera::cli {

namespace {

constexpr int kChartW = 560, kChartH = 380;             // one chart's cell, px
constexpr int kLeft = 78, kRight = 56, kTop = 40, kBottom = 92;  // plot margins inside a cell
constexpr int kTitleH = 60;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Range {
  double lo = 0, hi = 1;
};

// Tick step 1, 2 or 5 x 10^k giving about `n` ticks over [lo, hi].
double nice_step(double span, int n) {
  const double raw = span / std::max(1, n);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

// The data range widened to whole ticks; zero is included for y (rates and latencies start at 0).
Range axis_range(double lo, double hi, bool from_zero) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi - lo <= 0) {
    const double pad = hi == 0 ? 1 : std::abs(hi) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, 5);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

std::string num(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.2g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

void render_chart(std::string& out, const PlotChart& c, int x0, int y0) {
  const int pw = kChartW - kLeft - kRight, ph = kChartH - kTop - kBottom;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const PlotSeries& s : c.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  }
  const bool empty = !(xlo <= xhi);
  const Range xr = empty ? Range{} : axis_range(xlo, xhi, false);
  const Range yr = empty ? Range{} : axis_range(ylo, yhi, true);
  auto px = [&](double x) { return x0 + kLeft + (x - xr.lo) / (xr.hi - xr.lo) * pw; };
  auto py = [&](double y) { return y0 + kTop + ph - (y - yr.lo) / (yr.hi - yr.lo) * ph; };
  out += fmt::format(R"(<g class="chart" data-title="{}">)", xml_escape(c.title));
  out += fmt::format(R"(<text x="{}" y="{}" font-size="15" font-weight="bold" text-anchor="middle">{}</text>)",
                     x0 + kLeft + pw / 2, y0 + 24, xml_escape(c.title));
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)", x0 + kLeft,
                     y0 + kTop, pw, ph);
  // Ticks and grid lines.
  const double xs = nice_step(xr.hi - xr.lo, 5), ys = nice_step(yr.hi - yr.lo, 5);
  for (double t = xr.lo; t <= xr.hi + xs * 1e-9; t += xs) {
    out += fmt::format(R"(<line class="xtick" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#ddd"/>)", px(t),
                       y0 + kTop, y0 + kTop + ph);
    out += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{}</text>)", px(t),
                       y0 + kTop + ph + 16, num(t));
  }
  for (double t = yr.lo; t <= yr.hi + ys * 1e-9; t += ys) {
    out += fmt::format(R"(<line class="ytick" x1="{1}" y1="{0:.1f}" x2="{2}" y2="{0:.1f}" stroke="#ddd"/>)", py(t),
                       x0 + kLeft, x0 + kLeft + pw);
    out += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)", x0 + kLeft - 6,
                       py(t) + 4, num(t));
  }
  out += fmt::format(R"(<text class="xlabel" x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>)",
                     x0 + kLeft + pw / 2, y0 + kTop + ph + 36, xml_escape(c.x_label));
  out += fmt::format(
      R"svg(<text class="ylabel" x="{0}" y="{1}" font-size="12" text-anchor="middle" transform="rotate(-90 {0} {1})">{2}</text>)svg",
      x0 + 18, y0 + kTop + ph / 2, xml_escape(c.y_label));
  if (empty) {
    out += fmt::format(R"(<text x="{}" y="{}" font-size="13" text-anchor="middle">no data</text>)", x0 + kLeft + pw / 2,
                       y0 + kTop + ph / 2);
  }
  // Series, then the legend under the x label: entries left to right, each as wide as its text
  // (about 6.5 px per character at 11 px), wrapping onto a new line at the plot's width.
  int lx = x0 + kLeft, ly = y0 + kTop + ph + 56;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const PlotSeries& s = c.series[i];
    const char* color = kColors[i % std::size(kColors)];
    out += fmt::format(R"(<g class="series" data-series="{}">)", xml_escape(s.name));
    if (s.line && s.points.size() > 1) {
      std::string pts;
      for (const auto& [x, y] : s.points) {
        if (std::isfinite(x) && std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      }
      out += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>)", pts, color);
    }
    for (size_t k = 0; k < s.points.size(); ++k) {
      const auto [x, y] = s.points[k];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const std::string label = k < s.labels.size() ? s.labels[k] : std::string();
      out += fmt::format(
          R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}" data-series="{}" data-x="{}" data-y="{}" data-label="{}"/>)",
          px(x), py(y), color, xml_escape(s.name), x, y, xml_escape(label));
      if (!label.empty()) {
        out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="{}">{}</text>)", px(x) + 5, py(y) - 5,
                           color, xml_escape(label));
      }
    }
    out += "</g>";
    const int entry_w = 24 + static_cast<int>(s.name.size()) * 13 / 2 + 16;
    if (lx > x0 + kLeft && lx + entry_w > x0 + kLeft + pw) {
      lx = x0 + kLeft;
      ly += 16;
    }
    out += fmt::format(R"(<g class="legend"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="3"/>)", lx,
                       ly - 4, lx + 18, ly - 4, color);
    out += fmt::format(R"(<text x="{}" y="{}" font-size="11">{}</text></g>)", lx + 24, ly, xml_escape(s.name));
    lx += entry_w;
  }
  out += "</g>";
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Other control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\t' || ch == '\n') out.push_back(ch);
    }
  }
  return out;
}

std::string render_svg(const std::string& title, const std::vector<PlotChart>& charts, int columns) {
  columns = std::max(1, std::min<int>(columns, static_cast<int>(std::max<size_t>(1, charts.size()))));
  const int rows = static_cast<int>((charts.size() + static_cast<size_t>(columns) - 1) / static_cast<size_t>(columns));
  const int w = columns * kChartW, h = kTitleH + std::max(1, rows) * kChartH;
  std::string out = fmt::format(
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      "\n"
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif">)",
      w, h);
  out += fmt::format(R"(<title>{}</title><rect width="{}" height="{}" fill="white"/>)", xml_escape(title), w, h);
  // A long title goes on two lines: up to " (" and the rest.
  const size_t cut = title.find(" (");
  out += fmt::format(R"(<text class="title" x="{}" y="26" font-size="17" font-weight="bold" text-anchor="middle">{}</text>)",
                     w / 2, xml_escape(title.substr(0, cut)));
  if (cut != std::string::npos) {
    out += fmt::format(R"(<text class="subtitle" x="{}" y="48" font-size="13" text-anchor="middle">{}</text>)", w / 2,
                       xml_escape(title.substr(cut + 1)));
  }
  for (size_t i = 0; i < charts.size(); ++i) {
    render_chart(out, charts[i], static_cast<int>(i % static_cast<size_t>(columns)) * kChartW,
                 kTitleH + static_cast<int>(i / static_cast<size_t>(columns)) * kChartH);
  }
  out += "</svg>\n";
  return out;
}

std::string wrap_html(const std::string& title, const std::string& svg) {
  std::string body = svg;
  if (body.rfind("<?xml", 0) == 0) body = body.substr(body.find('\n') + 1);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title></head>\n"
      "<body style=\"margin:0\">\n{}</body></html>\n",
      xml_escape(title), body);
}

bool plot_path_ok(const std::string& path) {
  for (const char* ext : {".svg", ".html", ".htm"}) {
    const std::string e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

bool write_plot(const std::string& path, const std::string& title, const std::vector<PlotChart>& charts,
                std::string* error, int columns) {
  auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  const bool html = ends_with(".html") || ends_with(".htm");
  if (!html && !ends_with(".svg")) {
    *error = path + ": --plot writes .svg or .html files";
    return false;
  }
  const std::string svg = render_svg(title, charts, columns);
  std::ofstream out(path, std::ios::binary);
  out << (html ? wrap_html(title, svg) : svg);
  if (!out) {
    *error = path + ": cannot write the plot";
    return false;
  }
  return true;
}

}  // namespace tessera::cli
