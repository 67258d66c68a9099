// Reference K-quants (Q2_K..Q6_K) and the Q8_K activation format. Layouts:
// core/dtype.h, following ggml/src/ggml-common.h (block_q*_K) and the
// dequantize_row_q*_K functions of ggml-quants.c. Dequantization is written
// per element from the layout description, which makes it independent of
// the loop structure ggml uses. Quantization searches each sub-block's scale
// (and offset) for the least squared error, as described in quant_ref.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant_ref.h"

namespace tessera {

namespace {

constexpr int kQk = kSuperBlockElems;

int clamp_i(long v, int lo, int hi) {
  return static_cast<int>(v < lo ? lo : (v > hi ? hi : v));
}

// 2-bit field of element e in a 64-byte qs array shared by Q2_K and Q3_K:
// element 128h + 32c + l sits in bits 2c..2c+1 of qs[32h + l].
int q2_bits(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}
void set_q2_bits(uint8_t* qs, int e, int v) {
  qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((v & 3) << (2 * ((e % 128) / 32)));
}
// Q3_K's third bit of element e: bit 4h + c of hmask[l].
int q3_hbit(const uint8_t* hmask, int e) {
  return (hmask[e % 32] >> (4 * (e / 128) + (e % 128) / 32)) & 1;
}
// Q4_K/Q5_K nibble of element e: low nibble of qs[32p + l] for e = 64p + l,
// high nibble for e = 64p + 32 + l.
int q4_nibble(const uint8_t* qs, int e) {
  const uint8_t b = qs[32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? (b & 15) : (b >> 4);
}
void set_q4_nibble(uint8_t* qs, int e, int v) {
  qs[32 * (e / 64) + e % 32] |= static_cast<uint8_t>((v & 15) << ((e % 64) < 32 ? 0 : 4));
}
// Q6_K's 6-bit value of element e = 128h + 32c + l.
int q6_value(const uint8_t* ql, const uint8_t* qh, int e) {
  const int h = e / 128, c = (e % 128) / 32, l = e % 32;
  const int low = (ql[64 * h + 32 * (c & 1) + l] >> (4 * (c >> 1))) & 15;
  return low | ((qh[32 * h + l] >> (2 * c)) & 3) << 4;
}
void set_q6_value(uint8_t* ql, uint8_t* qh, int e, int v) {
  const int h = e / 128, c = (e % 128) / 32, l = e % 32;
  ql[64 * h + 32 * (c & 1) + l] |= static_cast<uint8_t>((v & 15) << (4 * (c >> 1)));
  qh[32 * h + l] |= static_cast<uint8_t>(((v >> 4) & 3) << (2 * c));
}

// The search behind the sub-block scales. Codes come from rounding x against
// a trial scale; given the codes, the scale (and offset) with the least
// squared error has a closed form (linear least squares in 1 or 2 unknowns).
// Trial inverse scales step through (levels + t) / range for t in
// [-1, 1] in steps of 0.1 (the plain min/max scale is t = 0), and the best fit
// over all trials is kept: rounding moves codes across boundaries, so the
// min/max scale is rarely the best one. Unweighted squared error: with
// activations of equal variance it is the expected squared error of a dot
// product.
//
// The trials are independent, so each loop below runs over the trials
// innermost: 21 accumulators the compiler can keep in vector lanes, each
// summed over the elements in the same order as a loop per trial would,
// which keeps every sum (and so every chosen scale) bit-identical to that
// loop while the additions no longer wait on each other.
constexpr int kTrialSteps = 10;
constexpr float kTrialStep = 0.1f;
constexpr int kTrials = 2 * kTrialSteps + 1;
constexpr int kMaxSubLen = 32;  // the longest sub-block searched (Q4_K/Q5_K)

// std::lround(v) clamped to [lo, hi], without the library call: trunc, then
// one step away from zero when the dropped fraction is at least a half
// (exact: |v| < 2^23 makes v - trunc(v) representable). |v| >= 2^23 (±Inf
// included) clamps to the nearer bound and NaN to lo. glibc's lround then
// clamp differs only where lround returns LONG_MIN: NaN (lo here too), +Inf
// and |v| >= 2^63 (lo there, hi here), which only a search over values
// that overflow the f16 scales reaches (quantize refuses those files). The
// Q8_K reference below keeps lround: the kernels' tables mirror it bit for
// bit, Inf and NaN rows included.
inline int round_clamp(float v, int lo, int hi) {
  constexpr float kBig = 8388608.0f;  // 2^23
  v = v > -kBig ? v : -kBig;
  v = v < kBig ? v : kBig;
  const int t = static_cast<int>(v);
  const float frac = v - static_cast<float>(t);
  const int r = t + (frac >= 0.5f ? 1 : 0) - (frac <= -0.5f ? 1 : 0);
  return r < lo ? lo : (r > hi ? hi : r);
}

// x ~ scale * q + offset with q in 0..levels, offset <= 0 (the K-quant
// affine formats store offset = -dmin * m with m >= 0).
struct AffineFit {
  float scale = 0.0f, offset = 0.0f;
};
// AVX2 where the CPU has it (twice the lanes); the same IEEE operations in
// the same order as the SSE2 build, so the same bits (the file is compiled
// with -ffp-contract=off: no FMA contraction in either).
// Not under the sanitizers, whose runtimes start after ifunc resolvers run.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TESSERA_TRIAL_NO_CLONES 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TESSERA_TRIAL_NO_CLONES 1
#endif
#endif
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(TESSERA_TRIAL_NO_CLONES)
#define TESSERA_TRIAL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TESSERA_TRIAL_CLONES
#endif

TESSERA_TRIAL_CLONES AffineFit fit_affine(const float* x, int len, int levels) {
  float mn = 0.0f, mx = x[0];
  for (int i = 0; i < len; ++i) {
    mn = std::fmin(mn, x[i]);
    mx = std::fmax(mx, x[i]);
  }
  AffineFit best{std::fmax(0.0f, (mx - mn) / static_cast<float>(levels)), mn};
  if (!(mx > mn)) return best;
  float iscale[kTrials];
  for (int t = 0; t < kTrials; ++t) {
    iscale[t] = (static_cast<float>(levels) + kTrialStep * static_cast<float>(t - kTrialSteps)) / (mx - mn);
  }
  int q[kMaxSubLen][kTrials];  // [element, trial]
  double sq[kTrials] = {}, sqq[kTrials] = {}, sx = 0, sqx[kTrials] = {};
  for (int i = 0; i < len; ++i) {
    const float xi = x[i], xm = x[i] - mn;
    for (int t = 0; t < kTrials; ++t) {
      const int qi = round_clamp(xm * iscale[t], 0, levels);
      q[i][t] = qi;
      sq[t] += qi;
      sqq[t] += static_cast<double>(qi) * qi;
      sqx[t] += static_cast<double>(qi) * xi;
    }
    sx += xi;
  }
  double s[kTrials], o[kTrials];
  bool ok[kTrials];
  for (int t = 0; t < kTrials; ++t) {
    const double det = len * sqq[t] - sq[t] * sq[t];
    ok[t] = det > 0;
    s[t] = 0;
    o[t] = 0;
    if (!ok[t]) continue;
    s[t] = (len * sqx[t] - sq[t] * sx) / det;
    o[t] = (sqq[t] * sx - sq[t] * sqx[t]) / det;
    if (o[t] > 0) {  // the format has no positive offset: refit the scale alone
      o[t] = 0;
      s[t] = sqx[t] / sqq[t];
    }
    ok[t] = s[t] > 0;
  }
  double err[kTrials] = {};
  for (int i = 0; i < len; ++i) {
    for (int t = 0; t < kTrials; ++t) {
      const double e = s[t] * q[i][t] + o[t] - x[i];
      err[t] += e * e;
    }
  }
  double best_err = HUGE_VAL;
  for (int t = 0; t < kTrials; ++t) {
    if (ok[t] && err[t] < best_err) {
      best_err = err[t];
      best = {static_cast<float>(s[t]), static_cast<float>(o[t])};
    }
  }
  return best;
}

// x ~ scale * q with q in -half..half-1; the scale's sign puts the element
// of largest magnitude on the side with the extra level (-half).
TESSERA_TRIAL_CLONES float fit_symmetric(const float* x, int len, int half) {
  float amax = 0.0f, m = 0.0f;
  for (int i = 0; i < len; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      m = x[i];
    }
  }
  float best = m / static_cast<float>(-half);
  if (amax == 0.0f) return best;
  float iscale[kTrials];
  for (int t = 0; t < kTrials; ++t) {
    iscale[t] = -(static_cast<float>(half) + kTrialStep * static_cast<float>(t - kTrialSteps)) / m;
  }
  int q[kMaxSubLen][kTrials];  // [element, trial]
  double sqq[kTrials] = {}, sqx[kTrials] = {};
  for (int i = 0; i < len; ++i) {
    const float xi = x[i];
    for (int t = 0; t < kTrials; ++t) {
      const int qi = round_clamp(xi * iscale[t], -half, half - 1);
      q[i][t] = qi;
      sqq[t] += static_cast<double>(qi) * qi;
      sqx[t] += static_cast<double>(qi) * xi;
    }
  }
  double s[kTrials];
  for (int t = 0; t < kTrials; ++t) s[t] = sqq[t] != 0 ? sqx[t] / sqq[t] : 0.0;
  double err[kTrials] = {};
  for (int i = 0; i < len; ++i) {
    for (int t = 0; t < kTrials; ++t) {
      const double e = s[t] * q[i][t] - x[i];
      err[t] += e * e;
    }
  }
  double best_err = HUGE_VAL;
  for (int t = 0; t < kTrials; ++t) {
    if (sqq[t] != 0 && err[t] < best_err) {
      best_err = err[t];
      best = static_cast<float>(s[t]);
    }
  }
  return best;
}

// Asymmetric sub-blocks: for each of n_sub sub-blocks of `len` elements,
// the least-squares scale and offset (fit_affine), mn = -offset. Then 6-bit (or
// 4-bit, code_max) codes for scales and mins against super-block d, dmin,
// rounded through f16 as stored, and the element values u in 0..levels.
struct Affine {
  uint16_t d, dmin;
  uint8_t sc[16], m[16];
  uint8_t u[kQk];
};
Affine quantize_affine(const float* x, int n_sub, int levels, int code_max) {
  const int len = kQk / n_sub;
  float scale[16], mins[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < n_sub; ++j) {
    const AffineFit f = fit_affine(x + j * len, len, levels);
    scale[j] = f.scale;
    mins[j] = -f.offset;
    max_scale = std::fmax(max_scale, scale[j]);
    max_min = std::fmax(max_min, mins[j]);
  }
  Affine a{};
  a.d = fp32_to_fp16(max_scale / static_cast<float>(code_max));
  a.dmin = fp32_to_fp16(max_min / static_cast<float>(code_max));
  const float d = fp16_to_fp32(a.d), dmin = fp16_to_fp32(a.dmin);
  for (int j = 0; j < n_sub; ++j) {
    a.sc[j] = static_cast<uint8_t>(d > 0 ? round_clamp(scale[j] / d, 0, code_max) : 0);
    a.m[j] = static_cast<uint8_t>(dmin > 0 ? round_clamp(mins[j] / dmin, 0, code_max) : 0);
    const float dl = d * a.sc[j], ml = dmin * a.m[j];
    const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
    for (int i = 0; i < len; ++i) {
      a.u[j * len + i] = static_cast<uint8_t>(round_clamp((x[j * len + i] + ml) * idl, 0, levels));
    }
  }
  return a;
}

// Symmetric sub-blocks of 16 with signed integer scales in [-code_max,
// code_max]: the least-squares sub-block scale (fit_symmetric), values q in
// [-half, half - 1] stored as q + half.
struct Symmetric {
  uint16_t d;
  int sc[16];
  uint8_t u[kQk];
};
Symmetric quantize_symmetric(const float* x, int half, int code_max) {
  float scale[16];
  float max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scale[j] = fit_symmetric(x + 16 * j, 16, half);
    max_abs = std::fmax(max_abs, std::fabs(scale[j]));
  }
  Symmetric s{};
  s.d = fp32_to_fp16(max_abs / static_cast<float>(code_max));
  const float d = fp16_to_fp32(s.d);
  for (int j = 0; j < 16; ++j) {
    s.sc[j] = d > 0 ? round_clamp(scale[j] / d, -code_max, code_max) : 0;
    const float dl = d * static_cast<float>(s.sc[j]);
    const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
    for (int i = 0; i < 16; ++i) {
      s.u[16 * j + i] = static_cast<uint8_t>(round_clamp(x[16 * j + i] * idl, -half, half - 1) + half);
    }
  }
  return s;
}

}  // namespace

void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    out[j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
  }
}

void q4k_scale_min(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4);
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | (scales[j] >> 6) << 4);
  }
}

int q3k_scale(int j, const uint8_t* scales) {
  const int low = j < 8 ? (scales[j] & 15) : (scales[j - 8] >> 4);
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | high << 4;
}

void quantize_row_q2_k_ref(const float* x, BlockQ2_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const Affine a = quantize_affine(x + b * kQk, 16, 3, 15);
    std::memset(&y[b], 0, sizeof(BlockQ2_K));
    y[b].d = a.d;
    y[b].dmin = a.dmin;
    for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<uint8_t>(a.sc[j] | a.m[j] << 4);
    for (int e = 0; e < kQk; ++e) set_q2_bits(y[b].qs, e, a.u[e]);
  }
}

void quantize_row_q3_k_ref(const float* x, BlockQ3_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const Symmetric s = quantize_symmetric(x + b * kQk, 4, 31);
    std::memset(&y[b], 0, sizeof(BlockQ3_K));
    y[b].d = s.d;
    for (int j = 0; j < 16; ++j) {
      const int code = s.sc[j] + 32;
      if (j < 8) {
        y[b].scales[j] |= static_cast<uint8_t>(code & 15);
      } else {
        y[b].scales[j - 8] |= static_cast<uint8_t>((code & 15) << 4);
      }
      y[b].scales[8 + j % 4] |= static_cast<uint8_t>((code >> 4) << (2 * (j / 4)));
    }
    for (int e = 0; e < kQk; ++e) {
      set_q2_bits(y[b].qs, e, s.u[e] & 3);
      y[b].hmask[e % 32] |= static_cast<uint8_t>((s.u[e] >> 2) << (4 * (e / 128) + (e % 128) / 32));
    }
  }
}

void quantize_row_q4_k_ref(const float* x, BlockQ4_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const Affine a = quantize_affine(x + b * kQk, 8, 15, 63);
    std::memset(&y[b], 0, sizeof(BlockQ4_K));
    y[b].d = a.d;
    y[b].dmin = a.dmin;
    pack_scale_min_k4(a.sc, a.m, y[b].scales);
    for (int e = 0; e < kQk; ++e) set_q4_nibble(y[b].qs, e, a.u[e]);
  }
}

void quantize_row_q5_k_ref(const float* x, BlockQ5_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const Affine a = quantize_affine(x + b * kQk, 8, 31, 63);
    std::memset(&y[b], 0, sizeof(BlockQ5_K));
    y[b].d = a.d;
    y[b].dmin = a.dmin;
    pack_scale_min_k4(a.sc, a.m, y[b].scales);
    for (int e = 0; e < kQk; ++e) {
      set_q4_nibble(y[b].qs, e, a.u[e] & 15);
      y[b].qh[e % 32] |= static_cast<uint8_t>((a.u[e] >> 4) << (e / 32));
    }
  }
}

void quantize_row_q6_k_ref(const float* x, BlockQ6_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const Symmetric s = quantize_symmetric(x + b * kQk, 32, 127);
    std::memset(&y[b], 0, sizeof(BlockQ6_K));
    y[b].d = s.d;
    for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<int8_t>(s.sc[j]);
    for (int e = 0; e < kQk; ++e) set_q6_value(y[b].ql, y[b].qh, e, s.u[e]);
  }
}

void quantize_row_q8_k_ref(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float* xb = x + b * kQk;
    float amax = 0.0f;
    for (int i = 0; i < kQk; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    for (int i = 0; i < kQk; ++i) y[b].qs[i] = static_cast<int8_t>(clamp_i(std::lround(xb[i] * id), -127, 127));
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
  }
}

void dequantize_row_q2_k_ref(const BlockQ2_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
    for (int e = 0; e < kQk; ++e) {
      const uint8_t sc = x[b].scales[e / 16];
      y[b * kQk + e] = d * static_cast<float>(sc & 15) * static_cast<float>(q2_bits(x[b].qs, e)) -
                       dmin * static_cast<float>(sc >> 4);
    }
  }
}

void dequantize_row_q3_k_ref(const BlockQ3_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int e = 0; e < kQk; ++e) {
      const int q = q2_bits(x[b].qs, e) + 4 * q3_hbit(x[b].hmask, e) - 4;
      y[b * kQk + e] = d * static_cast<float>(q3k_scale(e / 16, x[b].scales) - 32) * static_cast<float>(q);
    }
  }
}

void dequantize_row_q4_k_ref(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
    for (int e = 0; e < kQk; ++e) {
      uint8_t sc, m;
      q4k_scale_min(e / 32, x[b].scales, &sc, &m);
      y[b * kQk + e] = d * sc * static_cast<float>(q4_nibble(x[b].qs, e)) - dmin * m;
    }
  }
}

void dequantize_row_q5_k_ref(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
    for (int e = 0; e < kQk; ++e) {
      uint8_t sc, m;
      q4k_scale_min(e / 32, x[b].scales, &sc, &m);
      const int u = q4_nibble(x[b].qs, e) | ((x[b].qh[e % 32] >> (e / 32)) & 1) << 4;
      y[b * kQk + e] = d * sc * static_cast<float>(u) - dmin * m;
    }
  }
}

void dequantize_row_q6_k_ref(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int e = 0; e < kQk; ++e) {
      y[b * kQk + e] =
          d * static_cast<float>(x[b].scales[e / 16]) * static_cast<float>(q6_value(x[b].ql, x[b].qh, e) - 32);
    }
  }
}

void dequantize_row_q8_k_ref(const BlockQ8_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    for (int i = 0; i < kQk; ++i) y[b * kQk + i] = x[b].d * x[b].qs[i];
  }
}

}  // namespace tessera
