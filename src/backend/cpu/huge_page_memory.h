// HugePageMemory: a block of CPU memory backed by transparent huge pages
// where the system allows, for the buffers decode streams through every
// step (prepared weight copies, the KV cache). With 4 KiB pages a 1.1B F16
// model decoded at 0.6-0.8x the speed of the same bytes in 2 MiB pages, and
// decode at 4k context (each 16-slot KV block a separate TLB entry per
// layer) at ~0.8x (docs/quantization.md): the page walks, not the DRAM
// reads, were the limit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/status.h"

namespace tessera::cpu {

// An anonymous private mapping of at least `bytes`, aligned to 2 MiB and
// advised MADV_HUGEPAGE (for systems whose transparent huge pages are in
// "madvise" mode; a hint, errors ignored). Zero until written; untouched at
// creation, so its writers fault the pages in (in parallel where they write
// in parallel). Only [data(), data() + size()) rounded up to a page is kept
// mapped: a huge page never backs a partial 2 MiB past the end. Unmapped on
// destruction; movable, not copyable. An empty one (bytes == 0 or default)
// has data() == nullptr.
class HugePageMemory {
 public:
  HugePageMemory() = default;
  // Errors: none returned; a failed mapping is a TESSERA_CHECK failure (out
  // of address space), as std::vector's bad_alloc would be. For sizes that
  // come from a user's setting, use allocate().
  explicit HugePageMemory(size_t bytes);
  // Errors: kResourceExhausted when the mapping fails (address space or the
  // system's overcommit limit).
  static Result<HugePageMemory> allocate(size_t bytes);
  HugePageMemory(HugePageMemory&& o) noexcept;
  HugePageMemory& operator=(HugePageMemory&& o) noexcept;
  HugePageMemory(const HugePageMemory&) = delete;
  HugePageMemory& operator=(const HugePageMemory&) = delete;
  ~HugePageMemory();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  // The mapping, or nullptr when it fails.
  static uint8_t* map(size_t bytes);

  uint8_t* data_ = nullptr;  // 2 MiB-aligned
  size_t size_ = 0;
};

}  // namespace tessera::cpu
