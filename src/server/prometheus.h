// A small writer for the Prometheus text exposition format (version 0.0.4,
// https://prometheus.io/docs/instrumenting/exposition_formats/): every metric
// family gets `# HELP` and `# TYPE` lines followed by its samples. Histograms
// keep cumulative `_bucket{le="..."}` counts plus `_sum` and `_count`.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tessera::server {

// Label pairs of one sample, e.g. {{"finished_reason", "stop"}}.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A histogram with fixed upper bounds (seconds or counts). Thread-safe.
class Histogram {
 public:
  // `bounds`: strictly increasing finite upper bounds; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  // Counts one observation into every bucket whose bound is >= value.
  void observe(double value);
  // Appends the `_bucket`, `_sum` and `_count` samples of `name` to `out`.
  void write_samples(const std::string& name, std::string& out) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last: +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Builds one exposition document.
class PrometheusWriter {
 public:
  // `# HELP` and `# TYPE name counter`, then one sample per labels entry.
  void counter(const std::string& name, const std::string& help, const std::vector<std::pair<Labels, double>>& samples);
  void counter(const std::string& name, const std::string& help, double value);
  // `# HELP` and `# TYPE name gauge`, then the sample.
  void gauge(const std::string& name, const std::string& help, double value);
  // `# HELP` and `# TYPE name histogram`, then the histogram's samples.
  void histogram(const std::string& name, const std::string& help, const Histogram& h);
  const std::string& text() const { return out_; }

 private:
  void header(const std::string& name, const std::string& help, const char* type);
  std::string out_;
};

// A sample value as the format writes it: integers without a fraction,
// "+Inf" / "-Inf" / "NaN" for the special values.
std::string format_value(double v);
// Escapes a label value (backslash, double quote, newline).
std::string escape_label(const std::string& v);

}  // namespace tessera::server
