// Request ids for the X-Request-Id header, the request log and the response
// `id` (as vLLM: the client's X-Request-Id when it sends one, else generated).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::server {

// Longest X-Request-Id accepted from a client.
inline constexpr size_t kMaxRequestIdLength = 128;

// True when `id` may be echoed and logged as it is: 1 to kMaxRequestIdLength
// visible ASCII characters (0x21..0x7E; no spaces, quotes are allowed and
// escaped by the JSON log).
bool valid_request_id(std::string_view id);

// Generates ids unique within one server and, with overwhelming probability,
// across servers: 16 lowercase hex digits, a bijective 64-bit mix (SplitMix64's
// finalizer) of a random per-generator base plus a counter. Thread-safe.
class RequestIdGenerator {
 public:
  RequestIdGenerator();  // the base from std::random_device
  explicit RequestIdGenerator(uint64_t base) : base_(base) {}
  std::string next();

 private:
  uint64_t base_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace tessera::server
