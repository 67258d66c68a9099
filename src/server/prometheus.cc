#include "server/prometheus.h"

#include <fmt/core.h>

#include <cmath>

namespace tessera::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void Histogram::write_samples(const std::string& name, std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, format_value(bounds_[i]), cumulative);
  }
  cumulative += counts_.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n", name, format_value(sum_));
  out += fmt::format("{}_count {}\n", name, count_);
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void PrometheusWriter::header(const std::string& name, const std::string& help, const char* type) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusWriter::counter(const std::string& name, const std::string& help,
                               const std::vector<std::pair<Labels, double>>& samples) {
  header(name, help, "counter");
  for (const auto& [labels, value] : samples) {
    std::string l;
    for (const auto& [k, v] : labels) l += fmt::format("{}{}=\"{}\"", l.empty() ? "" : ",", k, escape_label(v));
    out_ += fmt::format("{}{}{}{} {}\n", name, l.empty() ? "" : "{", l, l.empty() ? "" : "}", format_value(value));
  }
}

void PrometheusWriter::counter(const std::string& name, const std::string& help, double value) {
  counter(name, help, {{Labels{}, value}});
}

void PrometheusWriter::gauge(const std::string& name, const std::string& help, double value) {
  header(name, help, "gauge");
  out_ += fmt::format("{} {}\n", name, format_value(value));
}

void PrometheusWriter::histogram(const std::string& name, const std::string& help, const Histogram& h) {
  header(name, help, "histogram");
  h.write_samples(name, out_);
}

}  // namespace tessera::server
