// Human byte sizes: parsing "64MiB", "2GiB", "512k", "1000000" and printing.
// Public API (implemented in src/core/byte_size.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/status.h"

namespace tessera {

// Accepts an integer or decimal number followed by an optional unit: B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB (case-insensitive; all units are powers of 1024).
// Errors: empty, negative, unknown unit or overflow (kInvalidArgument).
Result<uint64_t> parse_byte_size(std::string_view text);

// "1.50 MiB" style, with the largest unit that keeps the number >= 1.
std::string format_byte_size(uint64_t bytes);

}  // namespace tessera
