// Helpers for the GGUF tests: a raw little-endian byte builder for files the
// writer refuses to produce (hostile counts, bad layouts), and a parse helper
// that copies the bytes into an exactly-sized buffer so that AddressSanitizer
// catches any read past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"

namespace tessera::testing {

class RawGguf {
 public:
  RawGguf& u8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  RawGguf& u32(uint32_t v) { return put(v, 4); }
  RawGguf& u64(uint64_t v) { return put(v, 8); }
  RawGguf& str(const std::string& s) {
    u64(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  // magic, version, tensor count, kv count.
  RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b_.insert(b_.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  RawGguf& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (const uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  RawGguf& pad(size_t alignment = 32) {
    while (b_.size() % alignment != 0) b_.push_back(0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  const std::vector<uint8_t>& bytes() const { return b_; }
  size_t size() const { return b_.size(); }

 private:
  RawGguf& put(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) b_.push_back(static_cast<uint8_t>(v >> (8 * k)));
    return *this;
  }
  std::vector<uint8_t> b_;
};

// Parses the first `n` bytes of `b` from a heap copy of exactly n bytes.
// The copy is kept alive in `keep` for as long as the result is used.
inline Result<GgufFile> parse_copy(const std::vector<uint8_t>& b, size_t n, std::unique_ptr<uint8_t[]>& keep,
                                   const std::string& name = "test.gguf") {
  keep.reset(new uint8_t[n > 0 ? n : 1]);
  if (n > 0) std::memcpy(keep.get(), b.data(), n);
  return GgufFile::parse(keep.get(), n, name);
}

inline Result<GgufFile> parse_bytes(const std::vector<uint8_t>& b, const std::string& name = "test.gguf") {
  return GgufFile::parse(b.data(), b.size(), name);
}

}  // namespace tessera::testing
