// MappedFile: mapping a file, and release_pages dropping the pages of a
// mapping without changing what reads see (and leaving other memory alone).
#include "core/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tessera {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 2654435761u >> 11);
  return v;
}

TEST(MappedFile, ReleasePagesKeepsContents) {
  char path[] = "/tmp/tessera_mapped_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> bytes = pattern(5 * 4096 + 123);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  {
    auto f = MappedFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    ASSERT_EQ(f->size(), bytes.size());
    ASSERT_EQ(0, std::memcmp(f->data(), bytes.data(), bytes.size()));
    EXPECT_TRUE(MappedFile::contains(f->data() + 100, f->size() - 100));
    EXPECT_FALSE(MappedFile::contains(f->data() + 100, f->size()));  // runs past the end
    MappedFile::release_pages(f->data() + 100, 4 * 4096);            // unaligned: whole pages inside only
    MappedFile::release_pages(f->data(), f->size());
    EXPECT_EQ(0, std::memcmp(f->data(), bytes.data(), bytes.size()));
    MappedFile moved = std::move(*f);  // the mapping stays registered under its new owner
    MappedFile::release_pages(moved.data(), moved.size());
    EXPECT_EQ(0, std::memcmp(moved.data(), bytes.data(), bytes.size()));
  }
  std::remove(path);
  // Heap memory is not a mapping: untouched (MADV_DONTNEED would zero it).
  std::vector<uint8_t> heap = pattern(64 * 4096);
  EXPECT_FALSE(MappedFile::contains(heap.data(), heap.size()));
  MappedFile::release_pages(heap.data(), heap.size());
  EXPECT_EQ(heap, pattern(64 * 4096));
}

}  // namespace
}  // namespace tessera
