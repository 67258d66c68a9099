#include "progress_bar.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace tessera::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Redraws `line` over the previous one (padding with blanks over a longer tail).
void draw(std::FILE* out, std::string line, size_t& last_width, bool end) {
  const size_t width = line.size();
  if (width < last_width) line.append(last_width - width, ' ');
  last_width = width;
  fmt::print(out, "\r{}{}", line, end ? "\n" : "");
  std::fflush(out);
}

}  // namespace

ProgressBar::ProgressBar(std::string label, std::string unit, std::FILE* out, std::chrono::milliseconds log_interval)
    : label_(std::move(label)),
      unit_(std::move(unit)),
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

std::string ProgressBar::render_line(std::string_view label, int64_t done, int64_t total, std::string_view unit,
                                     double elapsed_s, std::string_view detail) {
  std::string line =
      fmt::format("{}: {}/{}{}{}, {:.1f} s", label, done, total, unit.empty() ? "" : " ", unit, elapsed_s);
  if (!detail.empty()) line += fmt::format(", {}", detail);
  return line;
}

void ProgressBar::update(int64_t done, int64_t total, std::string_view detail) {
  if (finished_) return;
  const auto now = Clock::now();
  const bool last = done >= total;
  if (!tty_ && !last && now - last_line_ < log_interval_) return;
  last_line_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (tty_) {
    draw(out_, render(label_, done, total, elapsed, detail), last_width_, last);
  } else {
    fmt::print(out_, "{}\n", render_line(label_, done, total, unit_, elapsed, detail));
    std::fflush(out_);
  }
  finished_ = last;
}

ProgressTimer::ProgressTimer(std::string label, std::string detail, std::FILE* out,
                             std::chrono::milliseconds log_interval)
    : label_(std::move(label)),
      detail_(std::move(detail)),
      out_(out),
      tty_(isatty(fileno(out)) == 1),
      log_interval_(log_interval),
      start_(Clock::now()),
      thread_([this] { run(); }) {}

ProgressTimer::~ProgressTimer() {
  stop(false);
}

void ProgressTimer::finish() {
  stop(true);
}

void ProgressTimer::run() {
  static constexpr char kSpin[] = {'|', '/', '-', '\\'};
  const auto tick = tty_ ? std::chrono::milliseconds(250) : log_interval_;
  std::unique_lock<std::mutex> lock(mu_);
  for (size_t n = 0; !cv_.wait_for(lock, tick, [this] { return stopping_; }); ++n) {
    const double elapsed = seconds_since(start_);
    if (tty_) {
      draw(out_, fmt::format("{} {} {:.1f} s {}", label_, kSpin[n % 4], elapsed, detail_), last_width_, false);
    } else {
      fmt::print(out_, "{}: {:.1f} s, {}\n", label_, elapsed, detail_);
      std::fflush(out_);
    }
  }
}

void ProgressTimer::stop(bool final_line) {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  const std::string line = final_line ? fmt::format("{}: done in {:.1f} s", label_, seconds_since(start_)) : "";
  if (tty_ && last_width_ > 0) {
    draw(out_, line, last_width_, final_line);
    if (!final_line) fmt::print(out_, "\r");
  } else if (final_line) {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
}

uint64_t model_file_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const auto n = fs::file_size(path, ec);
    return ec ? 0 : n;
  }
  uint64_t total = 0;
  if (!fs::is_directory(path, ec)) return 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const auto ext = entry.path().extension();
    if (ext != ".safetensors" && ext != ".gguf") continue;
    const auto n = entry.file_size(ec);
    if (!ec) total += n;
  }
  return total;
}

}  // namespace tessera::cli
