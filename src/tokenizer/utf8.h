// Internal UTF-8 helpers for the tokenizers (RFC 3629; well-formedness as in
// the Unicode Standard, Table 3-7, and U+FFFD substitution of maximal subparts
// as recommended in Unicode 15 §3.9 / W3C Encoding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessera::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

enum class Scan { kValid, kInvalid, kIncomplete };

struct ScanResult {
  Scan kind;
  size_t length;  // kValid: bytes of the character; kInvalid: bytes of the
                  // maximal ill-formed subpart (>= 1); kIncomplete: bytes seen
};

// Classifies the character starting at s[0] (s non-empty) strictly:
// overlong forms, surrogates and code points above U+10FFFF are invalid.
// kIncomplete: every byte present is a valid prefix but the string ends first.
inline ScanResult scan(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return {Scan::kValid, 1};
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {Scan::kInvalid, 1};
  }
  for (size_t k = 1; k < need; ++k) {
    if (k >= s.size()) return {Scan::kIncomplete, k};
    const auto b = static_cast<uint8_t>(s[k]);
    const uint8_t l = k == 1 ? lo : 0x80;
    const uint8_t h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return {Scan::kInvalid, k};
  }
  return {Scan::kValid, need};
}

// Length of the well-formed character at s[0], or 1 when the bytes there do
// not form one (so every byte of ill-formed input becomes its own symbol).
inline size_t char_length(std::string_view s) {
  const ScanResult r = scan(s);
  return r.kind == Scan::kValid ? r.length : 1;
}

}  // namespace tessera::utf8
