#include "backend/cpu/huge_page_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/check.h"

namespace tessera::cpu {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t page_rounded(size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

uint8_t* HugePageMemory::map(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHugePage) return nullptr;  // no such mapping; the sums below would wrap
  const size_t keep = page_rounded(bytes);
  const size_t mapped = keep + kHugePage;  // room to align the start
  void* m = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const auto lo = reinterpret_cast<uintptr_t>(m);
  auto* data = reinterpret_cast<uint8_t*>((lo + kHugePage - 1) / kHugePage * kHugePage);
  // Keep only [data, data + keep): a huge page can then never back the
  // partial 2 MiB at the end (up to 2 MiB of resident waste per matrix,
  // +250 MB on a 1.1B Q4_0 model, before this trim).
  const size_t head = static_cast<size_t>(data - static_cast<uint8_t*>(m));
  if (head > 0) ::munmap(m, head);
  if (mapped > head + keep) ::munmap(data + keep, mapped - head - keep);
  ::madvise(data, keep, MADV_HUGEPAGE);  // a hint: errors ignored
  return data;
}

HugePageMemory::HugePageMemory(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  data_ = map(bytes);
  TESSERA_CHECK(data_ != nullptr);
}

Result<HugePageMemory> HugePageMemory::allocate(size_t bytes) {
  HugePageMemory m;
  if (bytes == 0) return m;
  m.data_ = map(bytes);
  if (m.data_ == nullptr) return resource_exhausted("cannot map " + std::to_string(bytes) + " bytes");
  m.size_ = bytes;
  return m;
}

HugePageMemory::HugePageMemory(HugePageMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

HugePageMemory& HugePageMemory::operator=(HugePageMemory&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) ::munmap(data_, page_rounded(size_));
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

HugePageMemory::~HugePageMemory() {
  if (data_ != nullptr) ::munmap(data_, page_rounded(size_));
}

}  // namespace tessera::cpu
