#include "core/fp8.h"

#include <cmath>
#include <limits>

namespace tessera {

namespace {

float decode(uint8_t b) {
  const float sign = (b & 0x80) != 0 ? -1.0f : 1.0f;
  const int e = (b >> 3) & 0xF;
  const int m = b & 0x7;
  if (e == 0xF && m == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);  // m/8 * 2^-6
  return sign * std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
}

struct Table {
  float v[256];
  Table() {
    for (int i = 0; i < 256; ++i) v[i] = decode(static_cast<uint8_t>(i));
  }
};

}  // namespace

uint8_t fp32_to_fp8_e4m3(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return static_cast<uint8_t>(sign | 0x7F);
  const float a = std::fmin(std::fabs(x), kFp8E4M3Max);
  if (a < 0x1p-6f) {
    // Subnormal range: multiples of 2^-9; a result of 8 is the smallest normal (code 0x08).
    return static_cast<uint8_t>(sign | static_cast<int>(std::nearbyint(a * 0x1p9f)));
  }
  int e2 = 0;
  const float frac = std::frexp(a, &e2);                                  // a = frac * 2^e2, frac in [0.5, 1)
  int e = e2 - 1;                                                         // a = (2 * frac) * 2^e, 2 * frac in [1, 2)
  int q = static_cast<int>(std::nearbyint((2.0f * frac - 1.0f) * 8.0f));  // exact products; ties to even
  if (q == 8) {
    q = 0;
    ++e;
  }
  // a <= 448 = 1.75 * 2^8 keeps e <= 8 and (e, q) below the NaN code.
  return static_cast<uint8_t>(sign | ((e + 7) << 3) | q);
}

float fp8_e4m3_to_fp32(uint8_t b) {
  return fp8_e4m3_table()[b];
}

const float* fp8_e4m3_table() {
  static const Table table;
  return table.v;
}

}  // namespace tessera
