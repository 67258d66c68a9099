// A read-only memory mapping of a whole file. Model weights are used in
// place from the mapping, so loading costs no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/status.h"

namespace tessera {

class MappedFile {
 public:
  // Maps `path` read-only. Errors: not found / unreadable (kNotFound),
  // a directory or a mapping failure (kInvalidArgument).
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // Hints that [p, p + bytes) will not be read again soon (a copy replaces
  // it): where the range lies inside a live MappedFile, its whole pages are
  // dropped from this process (madvise MADV_DONTNEED: the file's pages stay
  // in the page cache and fault back in if read, so contents never change).
  // Any other memory is left alone. Thread-safe.
  static void release_pages(const void* p, size_t bytes);
  // Whether [p, p + bytes) lies inside one live MappedFile. Thread-safe.
  static bool contains(const void* p, size_t bytes);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tessera
