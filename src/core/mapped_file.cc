#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace tessera {

namespace {

// Live mappings [begin, end), for release_pages.
struct Registry {
  std::mutex mu;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
};
Registry& registry() {
  static Registry r;
  return r;
}
void add_range(const uint8_t* p, size_t n) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.ranges.emplace_back(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n);
}
void unmap(const uint8_t* p, size_t n) {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    std::erase_if(r.ranges, [&](const auto& range) { return range.first == reinterpret_cast<uintptr_t>(p); });
  }
  ::munmap(const_cast<uint8_t*>(p), n);
}

// Whether [lo, lo + bytes) lies inside one registered mapping; r.mu held.
bool inside_locked(const Registry& r, uintptr_t lo, size_t bytes) {
  return std::any_of(r.ranges.begin(), r.ranges.end(),
                     [&](const auto& range) { return range.first <= lo && lo + bytes <= range.second; });
}

}  // namespace

bool MappedFile::contains(const void* p, size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return inside_locked(r, reinterpret_cast<uintptr_t>(p), bytes);
}

void MappedFile::release_pages(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (lo + page - 1) / page * page, end = (lo + bytes) / page * page;
  if (end <= begin) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);  // held so the mapping cannot go away meanwhile
  if (inside_locked(r, lo, bytes)) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + ": not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return invalid_argument(path + ": mmap failed: " + std::strerror(errno));
    }
    f.data_ = static_cast<const uint8_t*>(p);
    add_range(f.data_, f.size_);
  }
  ::close(fd);
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) unmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) unmap(data_, size_);
}

}  // namespace tessera
