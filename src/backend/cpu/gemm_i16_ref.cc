#include "backend/cpu/gemm_i16_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::cpu {

float quantize_i16_group(const float* v, int16_t* q, int32_t qmax) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  float m = 0.0f;
  bool finite = true;
  for (int i = 0; i < kI16GroupCols; ++i) {
    const float a = std::fabs(v[i]);
    finite = finite && a < kInf;  // false for Inf and NaN
    m = std::max(m, a);
  }
  const float inv = static_cast<float>(qmax) / m;
  if (!finite || !(inv < kInf)) {  // also m == 0
    std::memset(q, 0, sizeof(int16_t) * kI16GroupCols);
    return finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  }
  for (int i = 0; i < kI16GroupCols; ++i) {
    const auto r = static_cast<int32_t>(std::nearbyint(v[i] * inv));
    q[i] = static_cast<int16_t>(std::clamp(r, -qmax, qmax));
  }
  return m / static_cast<float>(qmax);
}

void pack_i16_ref(const float* x, uint8_t* out, int64_t n) {
  auto* q = reinterpret_cast<int16_t*>(out);
  auto* d = reinterpret_cast<float*>(out + n * 2);
  for (int64_t g = 0; g < n / kI16GroupCols; ++g) {
    d[g] = quantize_i16_group(x + g * kI16GroupCols, q + g * kI16GroupCols, kI16ActMax);
  }
}

float dot_i16_ref(const int16_t* wq, const float* wd, const uint8_t* x, int64_t n) {
  const auto* xq = reinterpret_cast<const int16_t*>(x);
  const auto* xd = reinterpret_cast<const float*>(x + n * 2);
  float acc = 0.0f;
  for (int64_t g = 0; g < n / kI16GroupCols; ++g) {
    int32_t isum = 0;
    for (int64_t i = g * kI16GroupCols; i < (g + 1) * kI16GroupCols; ++i) isum += int32_t{wq[i]} * int32_t{xq[i]};
    acc = std::fma(static_cast<float>(isum), wd[g] * xd[g], acc);
  }
  return acc;
}

}  // namespace tessera::cpu
