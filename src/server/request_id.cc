#include "server/request_id.h"

#include <fmt/core.h>

#include <random>

namespace tessera::server {

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  for (char c : id) {
    if (c < 0x21 || c > 0x7E) return false;
  }
  return true;
}

RequestIdGenerator::RequestIdGenerator() {
  std::random_device rd;
  base_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string RequestIdGenerator::next() {
  uint64_t z = base_ + counter_.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return fmt::format("{:016x}", z);
}

}  // namespace tessera::server
