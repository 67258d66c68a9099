// A bounds-checked little-endian cursor over a byte buffer, for parsing
// untrusted files. Every read checks the bytes left first and reports
// "<name>: offset N: <problem>" as kDataLoss, so callers never index past the
// end and never need their own length arithmetic.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "tessera/status.h"

namespace tessera {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size, std::string_view name)
      : data_(data), size_(size), name_(name) {}

  size_t offset() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }

  // kDataLoss "<name>: offset <at>: <what>".
  Status error_at(size_t at, std::string_view what) const {
    return data_loss(std::string(name_) + ": offset " + std::to_string(at) + ": " + std::string(what));
  }
  Status error(std::string_view what) const { return error_at(pos_, what); }

  // Reads an unsigned/signed integer or a float of sizeof(T) bytes, little-endian
  // regardless of the host (assembled byte by byte).
  template <typename T>
  Result<T> read(std::string_view what) {
    static_assert(std::is_arithmetic_v<T>);
    constexpr size_t kN = sizeof(T);
    if (remaining() < kN) {
      return error("truncated: " + std::string(what) + " needs " + std::to_string(kN) +
                   " bytes, " + std::to_string(remaining()) + " left");
    }
    using U = std::conditional_t<kN == 1, uint8_t,
              std::conditional_t<kN == 2, uint16_t, std::conditional_t<kN == 4, uint32_t, uint64_t>>>;
    U v = 0;
    for (size_t k = 0; k < kN; ++k) v |= static_cast<U>(static_cast<U>(data_[pos_ + k]) << (8 * k));
    pos_ += kN;
    if constexpr (std::is_same_v<T, bool>) {
      return v != 0;
    } else {
      return std::bit_cast<T>(v);
    }
  }

  // A GGUF string: uint64 length then that many bytes (not NUL-terminated).
  // The length is checked against the bytes left before anything is allocated.
  Result<std::string> read_string(std::string_view what) {
    const size_t start = pos_;
    TESSERA_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(std::string(what) + " length"));
    if (len > remaining()) {
      return error_at(start, std::string(what) + " length " + std::to_string(len) + " exceeds file size (" +
                                 std::to_string(remaining()) + " bytes left)");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string_view name_;
};

}  // namespace tessera
