#include "backend/cpu/gemm_bf16_ref.h"

#include <bit>

#include "backend/cpu/gemm.h"
#include "core/dtype.h"

namespace tessera::cpu {

namespace {

// A subnormal f32 becomes a zero of the same sign.
float flush(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return (u & 0x7f800000u) == 0 ? std::bit_cast<float>(u & 0x80000000u) : f;
}

}  // namespace

uint16_t fp32_to_bf16_daz(float f) {
  return fp32_to_bf16(flush(f));
}

void pack_bf16_ref(const float* x, uint16_t* out, int64_t n) {
  const int64_t padded = packed_bf16_row_elems(n);
  for (int64_t i = 0; i < padded; ++i) out[i] = i < n ? fp32_to_bf16_daz(x[i]) : uint16_t{0};
}

float dot_bf16_dp_ref(const uint16_t* w, const uint16_t* x, int64_t n) {
  auto at = [](const uint16_t* p, int64_t i) { return flush(bf16_to_fp32(p[i])); };
  float acc = 0.0f;
  for (int64_t e = 0; e + 1 < n; e += 2) {
    acc = flush(acc + flush(at(w, e + 1) * at(x, e + 1)));
    acc = flush(acc + flush(at(w, e) * at(x, e)));
  }
  return acc;
}

}  // namespace tessera::cpu
