#include "server/request_log.h"

#include <fmt/core.h>

#include <ctime>
#include <nlohmann/json.hpp>

namespace tessera::server {

namespace {

std::string utc_time(std::chrono::system_clock::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

// Milliseconds to 0.1 ms, enough for a log and short to read.
double round_ms(double ms) {
  return static_cast<double>(static_cast<int64_t>(ms * 10 + 0.5)) / 10;
}

}  // namespace

std::string format_request_log(const RequestLogRecord& r, RequestLogFormat format,
                               std::chrono::system_clock::time_point now) {
  switch (format) {
    case RequestLogFormat::kText:
      return fmt::format(
          "{} request id={} \"{} {}\" {} prompt={} cached={} generated={} ttft_ms={} e2e_ms={:.1f} finish={}",
          utc_time(now), r.request_id, r.method, r.path, r.status, r.prompt_tokens, r.cached_tokens, r.generated_tokens,
          r.ttft_ms ? fmt::format("{:.1f}", *r.ttft_ms) : std::string("-"), r.e2e_ms,
          r.finish_reason.empty() ? std::string("-") : r.finish_reason);
    case RequestLogFormat::kJson: {
      nlohmann::ordered_json j = {{"time", utc_time(now)},
                                  {"request_id", r.request_id},
                                  {"method", r.method},
                                  {"path", r.path},
                                  {"status", r.status},
                                  {"prompt_tokens", r.prompt_tokens},
                                  {"cached_tokens", r.cached_tokens},
                                  {"generated_tokens", r.generated_tokens},
                                  {"ttft_ms", r.ttft_ms ? nlohmann::ordered_json(round_ms(*r.ttft_ms)) : nullptr},
                                  {"e2e_ms", round_ms(r.e2e_ms)},
                                  {"finish_reason", r.finish_reason.empty() ? nlohmann::ordered_json(nullptr)
                                                                            : nlohmann::ordered_json(r.finish_reason)}};
      return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  return {};
}

void RequestLog::write(const RequestLogRecord& r) const {
  const std::string line = format_request_log(r, format_, std::chrono::system_clock::now()) + "\n";
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace tessera::server
