// The GPT-2 byte-level alphabet (Radford et al. 2019, "Language Models are
// Unsupervised Multitask Learners"; openai/gpt-2 encoder.py bytes_to_unicode):
// a bijection between the 256 byte values and 256 printable Unicode code
// points, so that byte-level BPE can treat arbitrary bytes as characters.
// Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF map to the code point of the same
// value; the remaining 68 bytes (0x00-0x20, 0x7F-0xA0, 0xAD) map, in
// increasing order, to U+0100, U+0101, ... (so ' ' is U+0120 'Ġ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::byte_unicode {

// Code point that byte `b` is written as.
uint32_t byte_to_code_point(uint8_t b);

// UTF-8 encoding (2 bytes at most) of byte_to_code_point(b).
std::string_view byte_to_utf8(uint8_t b);

// The byte written as code point `cp`, or -1 when `cp` is not in the alphabet.
int code_point_to_byte(uint32_t cp);

// Every byte of `bytes` replaced by its alphabet character (UTF-8).
std::string encode(std::string_view bytes);

// Inverse of encode(): each well-formed UTF-8 character of `text` that is in
// the alphabet becomes its byte; other characters and ill-formed bytes are
// copied unchanged (as Hugging Face's ByteLevel decoder does).
std::string decode(std::string_view text);

}  // namespace tessera::byte_unicode
