// A progress bar on stderr for long CLI commands (quantize, bench-serve).
// On a terminal it is one line redrawn in place with '\r'; when stderr is not
// a terminal (CI logs, pipes) it prints a plain line at most every
// `log_interval` and once at the end, so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tessera::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  // `label` starts every line; elapsed time counts from construction.
  explicit ProgressBar(std::string label, std::FILE* out = stderr,
                       std::chrono::seconds log_interval = std::chrono::seconds(10));
  // Shows `done` of `total` and `detail` (e.g. "2 errors", a tensor name).
  // Reaching done == total ends the line; later calls print nothing. Not thread-safe.
  void update(int64_t done, int64_t total, std::string_view detail = {});

  // The text of one bar: "LABEL [####      ]  DONE/TOTAL  ELAPSED s  DETAIL" (no newline).
  static std::string render(std::string_view label, int64_t done, int64_t total, double elapsed_s,
                            std::string_view detail);

 private:
  std::string label_;
  std::FILE* out_;
  bool tty_;
  bool finished_ = false;
  std::chrono::seconds log_interval_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  size_t last_width_ = 0;  // characters of the line last drawn on a terminal
};

}  // namespace tessera::cli
