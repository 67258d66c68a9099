// libFuzzer target for the safetensors reader: any input must parse or fail
// with a Status, never crash, hang or read out of bounds. On success every
// tensor's first and last byte is read (ASan checks they lie inside the
// input), its byte count must match its shape and dtype, lookups by name must
// find it, and tensors must not overlap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tessera::SafetensorsFile;
  const tessera::Result<SafetensorsFile> r = SafetensorsFile::parse(data, size, "fuzz");
  if (!r.ok()) {
    if (r.status().message().rfind("fuzz: ", 0) != 0) std::abort();
    return 0;
  }

  volatile uint8_t sink = 0;
  std::vector<std::pair<const uint8_t*, uint64_t>> ranges;
  for (const tessera::SafetensorsTensor& t : r->tensors()) {
    if (t.data < data + r->data_offset() || t.n_bytes > size || t.data + t.n_bytes > data + size) std::abort();
    int64_t n = 1;
    for (const int64_t d : t.shape) {
      if (d < 0) std::abort();
      n *= d;
    }
    if (n != t.n_elements || t.n_bytes != static_cast<uint64_t>(n) * tessera::dtype_block_bytes(t.dtype)) std::abort();
    if (t.n_bytes > 0) {
      sink = static_cast<uint8_t>(sink + t.data[0]);
      sink = static_cast<uint8_t>(sink + t.data[t.n_bytes - 1]);
      ranges.emplace_back(t.data, t.n_bytes);
    }
    if (r->find(t.name) != &t) std::abort();
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); ++k) {
    if (ranges[k].first < ranges[k - 1].first + ranges[k - 1].second) std::abort();
  }
  for (const auto& [key, value] : r->metadata()) sink = static_cast<uint8_t>(sink + key.size() + value.size());
  (void)sink;
  return 0;
}
