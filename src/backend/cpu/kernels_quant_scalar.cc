// Scalar dot products of Q4_1/Q5_0/Q5_1 against Q8_0 and of the K-quants
// against Q8_K: the numerics reference for kernels_quant_avx2/avx512.cc.
// Written from the layouts in core/dtype.h (ggml-common.h), loop by loop
// as ggml stores the data, independently of core/quant_ref's per-element
// dequantizers (the tests compare the two). Integer sums are exact; each
// block contributes one f32 term.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels_internal.h"
#include "core/dtype.h"

namespace tessera::cpu::detail {
namespace {

constexpr int kQk = kQuantBlockElems;
constexpr int kQkK = kSuperBlockElems;

// Sum of (u_i) * x_i and of x_i over a 32-block with 4-bit u in Q4_0 order.
void sums_q4(const uint8_t* qs, const int8_t* x, int32_t* sumi, int32_t* sumx) {
  *sumi = 0;
  *sumx = 0;
  for (int i = 0; i < kQk / 2; ++i) {
    *sumi += (qs[i] & 0x0f) * int32_t{x[i]} + (qs[i] >> 4) * int32_t{x[i + 16]};
    *sumx += int32_t{x[i]} + int32_t{x[i + 16]};
  }
}

// The same for 5-bit u (fifth bit of element i = bit i of qh).
void sums_q5(const uint8_t* qs, const uint8_t* qh, const int8_t* x, int32_t* sumi, int32_t* sumx) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  *sumi = 0;
  *sumx = 0;
  for (int i = 0; i < kQk / 2; ++i) {
    const int32_t lo = (qs[i] & 0x0f) | static_cast<int32_t>((h >> i) & 1u) << 4;
    const int32_t hi = (qs[i] >> 4) | static_cast<int32_t>((h >> (i + 16)) & 1u) << 4;
    *sumi += lo * int32_t{x[i]} + hi * int32_t{x[i + 16]};
    *sumx += int32_t{x[i]} + int32_t{x[i + 16]};
  }
}

float dot_q4_1(const BlockQ4_1* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQk; ++b) {
    int32_t sumi, sumx;
    sums_q4(w[b].qs, x[b].qs, &sumi, &sumx);
    const float dx = fp16_to_fp32(x[b].d);
    sum +=
        static_cast<float>(sumi) * (fp16_to_fp32(w[b].d) * dx) + static_cast<float>(sumx) * (fp16_to_fp32(w[b].m) * dx);
  }
  return sum;
}

float dot_q5_0(const BlockQ5_0* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQk; ++b) {
    int32_t sumi, sumx;
    sums_q5(w[b].qs, w[b].qh, x[b].qs, &sumi, &sumx);
    sum += static_cast<float>(sumi - 16 * sumx) * (fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d));
  }
  return sum;
}

float dot_q5_1(const BlockQ5_1* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQk; ++b) {
    int32_t sumi, sumx;
    sums_q5(w[b].qs, w[b].qh, x[b].qs, &sumi, &sumx);
    const float dx = fp16_to_fp32(x[b].d);
    sum +=
        static_cast<float>(sumi) * (fp16_to_fp32(w[b].d) * dx) + static_cast<float>(sumx) * (fp16_to_fp32(w[b].m) * dx);
  }
  return sum;
}

float dot_q2_k(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int j = 0; j < 16; ++j) summ += (w[b].scales[j] >> 4) * int32_t{x[b].bsums[j]};
    for (int h = 0; h < 2; ++h) {
      for (int c = 0; c < 4; ++c) {
        for (int half = 0; half < 2; ++half) {
          int32_t s = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            s += ((w[b].qs[32 * h + l] >> (2 * c)) & 3) * int32_t{x[b].qs[128 * h + 32 * c + l]};
          }
          sumi += (w[b].scales[8 * h + 2 * c + half] & 15) * s;
        }
      }
    }
    sum +=
        x[b].d * (fp16_to_fp32(w[b].d) * static_cast<float>(sumi) - fp16_to_fp32(w[b].dmin) * static_cast<float>(summ));
  }
  return sum;
}

float dot_q3_k(const BlockQ3_K* w, const BlockQ8_K* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const uint8_t* sc = w[b].scales;
    int32_t sumi = 0;
    for (int h = 0; h < 2; ++h) {
      for (int c = 0; c < 4; ++c) {
        for (int half = 0; half < 2; ++half) {
          const int j = 8 * h + 2 * c + half;
          const int code = (j < 8 ? (sc[j] & 15) : (sc[j - 8] >> 4)) | ((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4;
          int32_t s = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int q = ((w[b].qs[32 * h + l] >> (2 * c)) & 3) - ((w[b].hmask[l] >> (4 * h + c)) & 1 ? 0 : 4);
            s += q * int32_t{x[b].qs[128 * h + 32 * c + l]};
          }
          sumi += (code - 32) * s;
        }
      }
    }
    sum += x[b].d * fp16_to_fp32(w[b].d) * static_cast<float>(sumi);
  }
  return sum;
}

// Q4_K/Q5_K share the scale packing; Bits = 4 or 5.
template <int Bits, typename Block>
float dot_q45_k(const Block* w, const BlockQ8_K* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const uint8_t* s = w[b].scales;
    int32_t sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      const int sc = j < 4 ? (s[j] & 63) : ((s[j + 4] & 15) | (s[j - 4] >> 6) << 4);
      const int m = j < 4 ? (s[j + 4] & 63) : ((s[j + 4] >> 4) | (s[j] >> 6) << 4);
      summ += m * (int32_t{x[b].bsums[2 * j]} + int32_t{x[b].bsums[2 * j + 1]});
      int32_t acc = 0;
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = w[b].qs[32 * (j / 2) + l];
        int u = (j % 2) ? (byte >> 4) : (byte & 15);
        if constexpr (Bits == 5) u |= ((w[b].qh[l] >> j) & 1) << 4;
        acc += u * int32_t{x[b].qs[32 * j + l]};
      }
      sumi += sc * acc;
    }
    sum +=
        x[b].d * (fp16_to_fp32(w[b].d) * static_cast<float>(sumi) - fp16_to_fp32(w[b].dmin) * static_cast<float>(summ));
  }
  return sum;
}

float dot_q4_k(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n) {
  return dot_q45_k<4>(w, x, n);
}
float dot_q5_k(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n) {
  return dot_q45_k<5>(w, x, n);
}

float dot_q6_k(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQkK; ++b) {
    int32_t sumi = 0;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = w[b].ql + 64 * h;
      const uint8_t* qh = w[b].qh + 32 * h;
      for (int c = 0; c < 4; ++c) {
        for (int half = 0; half < 2; ++half) {
          int32_t s = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int low = (ql[32 * (c & 1) + l] >> (4 * (c >> 1))) & 15;
            const int q = (low | ((qh[l] >> (2 * c)) & 3) << 4) - 32;
            s += q * int32_t{x[b].qs[128 * h + 32 * c + l]};
          }
          sumi += w[b].scales[8 * h + 2 * c + half] * s;
        }
      }
    }
    sum += x[b].d * fp16_to_fp32(w[b].d) * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace

// Same arithmetic as quantize_row_q8_k_ref (restated so the table does not
// depend on how core implements it); the AVX2/AVX-512 tables use
// quantize_row_q8_k_simd (kernels_quant_simd.inc), bit-identical to it.
void quantize_row_q8_k_scalar(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const float* xb = x + b * kQkK;
    float amax = 0.0f;
    for (int i = 0; i < kQkK; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    for (int i = 0; i < kQkK; ++i) {
      const long q = std::lround(xb[i] * id);
      y[b].qs[i] = static_cast<int8_t>(q > 127 ? 127 : (q < -127 ? -127 : q));
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
  }
}

// kDotRows single-row dots, rows `row_stride` bytes apart (the scalar
// reference has nothing to share between rows).
template <typename Block, float (*Dot)(const Block*, const BlockQ8_K*, int64_t)>
void dot_rows_k(const Block* w, int64_t row_stride, const BlockQ8_K* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; ++r) {
    out[r] = Dot(reinterpret_cast<const Block*>(reinterpret_cast<const char*>(w) + r * row_stride), x, n);
  }
}

const QuantKernels kQuantScalar{
    .dot_q4_1 = dot_q4_1,
    .dot_q5_0 = dot_q5_0,
    .dot_q5_1 = dot_q5_1,
    .dot_q2_k = dot_q2_k,
    .dot_q3_k = dot_q3_k,
    .dot_q4_k = dot_q4_k,
    .dot_q5_k = dot_q5_k,
    .dot_q6_k = dot_q6_k,
    .dot_rows_q4_k = dot_rows_k<BlockQ4_K, dot_q4_k>,
    .dot_rows_q5_k = dot_rows_k<BlockQ5_K, dot_q5_k>,
    .dot_rows_q6_k = dot_rows_k<BlockQ6_K, dot_q6_k>,
    .quantize_row_q8_k = quantize_row_q8_k_scalar,
};

}  // namespace tessera::cpu::detail
