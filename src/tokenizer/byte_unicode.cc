#include "tokenizer/byte_unicode.h"

#include <array>

#include "tokenizer/utf8.h"

namespace tessera::byte_unicode {

namespace {

bool maps_to_itself(uint32_t b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Tables {
  std::array<uint32_t, 256> code_point{};
  std::array<char, 512> utf8{};  // two bytes per entry (second unused for ASCII)
  std::array<uint8_t, 256> utf8_len{};
  std::array<int16_t, 324> byte_of{};  // code points 0..323 cover the alphabet

  Tables() {
    byte_of.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = maps_to_itself(b) ? b : next++;
      code_point[b] = cp;
      byte_of[cp] = static_cast<int16_t>(b);
      if (cp < 0x80) {
        utf8[2 * b] = static_cast<char>(cp);
        utf8_len[b] = 1;
      } else {
        utf8[2 * b] = static_cast<char>(0xC0 | (cp >> 6));
        utf8[2 * b + 1] = static_cast<char>(0x80 | (cp & 0x3F));
        utf8_len[b] = 2;
      }
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t b) { return tables().code_point[b]; }

std::string_view byte_to_utf8(uint8_t b) {
  const Tables& t = tables();
  return {&t.utf8[2 * static_cast<size_t>(b)], t.utf8_len[b]};
}

int code_point_to_byte(uint32_t cp) { return cp < tables().byte_of.size() ? tables().byte_of[cp] : -1; }

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out.append(byte_to_utf8(static_cast<uint8_t>(c)));
  return out;
}

std::string decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t len = utf8::char_length(text.substr(pos));
    const auto b0 = static_cast<uint8_t>(text[pos]);
    int byte = -1;
    if (len == 1 && b0 < 0x80) {
      byte = code_point_to_byte(b0);
    } else if (len == 2) {
      const uint32_t cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[pos + 1]) & 0x3Fu);
      byte = code_point_to_byte(cp);
    }
    if (byte >= 0) {
      out.push_back(static_cast<char>(byte));
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

}  // namespace tessera::byte_unicode
