// Progress on stderr for long CLI commands (quantize, perplexity, bench,
// bench-serve; convert and model loading through ProgressTimer). On a
// terminal a bar is one line redrawn in place with '\r'; when stderr is not a
// terminal (CI logs, pipes) plain lines come at most every `log_interval`
// and once at the end ("quantize: 120/201 tensors, 14.2 s, blk.9.ffn_up.weight"),
// so logs stay short.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tessera::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  // `label` starts every line, `unit` names what is counted ("tensors"; may be
  // empty); elapsed time counts from construction.
  explicit ProgressBar(std::string label, std::string unit = {}, std::FILE* out = stderr,
                       std::chrono::milliseconds log_interval = std::chrono::seconds(10));
  // Shows `done` of `total` and `detail` (e.g. "2 errors", a tensor name).
  // Reaching done == total ends the line; later calls print nothing. Not thread-safe.
  void update(int64_t done, int64_t total, std::string_view detail = {});

  // A terminal's bar: "LABEL [####      ] DONE/TOTAL ELAPSED s DETAIL" (no newline).
  static std::string render(std::string_view label, int64_t done, int64_t total, double elapsed_s,
                            std::string_view detail);
  // A log's line: "LABEL: DONE/TOTAL UNIT, ELAPSED s[, DETAIL]" (no newline).
  static std::string render_line(std::string_view label, int64_t done, int64_t total, std::string_view unit,
                                 double elapsed_s, std::string_view detail);

 private:
  std::string label_;
  std::string unit_;
  std::FILE* out_;
  bool tty_;
  bool finished_ = false;
  std::chrono::milliseconds log_interval_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  size_t last_width_ = 0;  // characters of the line last drawn on a terminal
};

// Progress of one step whose amount of work is not known (loading a large
// model, converting a checkpoint): a thread shows the elapsed time — on a
// terminal "LABEL | 3.2 s DETAIL" redrawn with a spinner, otherwise
// "LABEL: 10.0 s, DETAIL" every `log_interval` — until finish() prints
// "LABEL: done in E s" (plain in both cases). The destructor stops the thread
// without that line (an error is printed instead).
class ProgressTimer {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressTimer(std::string label, std::string detail, std::FILE* out = stderr,
                std::chrono::milliseconds log_interval = std::chrono::seconds(10));
  ~ProgressTimer();
  ProgressTimer(const ProgressTimer&) = delete;
  ProgressTimer& operator=(const ProgressTimer&) = delete;
  // Stops the thread and prints the final line (once).
  void finish();

 private:
  void run();
  void stop(bool final_line);

  std::string label_;
  std::string detail_;
  std::FILE* out_;
  bool tty_;
  std::chrono::milliseconds log_interval_;
  Clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  bool stopped_ = false;
  size_t last_width_ = 0;  // the thread's last terminal line
  std::thread thread_;
};

// Bytes of the model at `path` (a file, or a directory's *.safetensors / *.gguf files); 0 when unreadable.
uint64_t model_file_bytes(const std::string& path);
// Models at least this large get a ProgressTimer while they load (serve, bench).
inline constexpr uint64_t kLargeModelBytes = uint64_t{256} << 20;

}  // namespace tessera::cli
