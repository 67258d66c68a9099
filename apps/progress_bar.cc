#include "progress_bar.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>

namespace tessera::cli {

ProgressBar::ProgressBar(std::string label, std::FILE* out, std::chrono::seconds log_interval)
    : label_(std::move(label)),
      out_(out),
      tty_(isatty(fileno(out)) == 1),
      log_interval_(log_interval),
      start_(Clock::now()),
      last_line_(start_) {}

std::string ProgressBar::render(std::string_view label, int64_t done, int64_t total, double elapsed_s,
                                std::string_view detail) {
  constexpr int64_t kWidth = 30;
  const int64_t filled = total > 0 ? std::clamp<int64_t>(done * kWidth / total, 0, kWidth) : kWidth;
  std::string line = fmt::format("{} [{}{}] {}/{} {:.1f} s", label, std::string(static_cast<size_t>(filled), '#'),
                                 std::string(static_cast<size_t>(kWidth - filled), ' '), done, total, elapsed_s);
  if (!detail.empty()) line += fmt::format(" {}", detail);
  return line;
}

void ProgressBar::update(int64_t done, int64_t total, std::string_view detail) {
  if (finished_) return;
  const auto now = Clock::now();
  const bool last = done >= total;
  if (!tty_ && !last && now - last_line_ < log_interval_) return;
  last_line_ = now;
  std::string line = render(label_, done, total, std::chrono::duration<double>(now - start_).count(), detail);
  if (tty_) {
    // Pad with blanks over the tail of a longer previous line.
    const size_t width = line.size();
    if (width < last_width_) line.append(last_width_ - width, ' ');
    last_width_ = width;
    fmt::print(out_, "\r{}{}", line, last ? "\n" : "");
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
  finished_ = last;
}

}  // namespace tessera::cli
