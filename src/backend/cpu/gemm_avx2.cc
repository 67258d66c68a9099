// AVX2 + FMA + F16C tile kernels (gemm.h), for CPUs without AVX-512 (Zen 2/3,
// Intel client cores since Alder Lake). Compiled with TESSERA_AVX2_FLAGS and
// only reached through kernels_for() after the CPUID check.
//
// The weights are in the same x16 layout as for the AVX-512 set and the
// activations are packed the same way (gemm_pack.h). A group of 16 lanes is
// taken as two halves of 8 (one 256-bit vector per quant word); each half
// ends in one convert and one FMA into the element's 8-lane f32 accumulator,
// half 0 before half 1, groups in row order.
//
// Integer products (no VNNI on these parts): vpmaddubsw multiplies unsigned
// by signed bytes into saturating s16 pair sums, vpmaddwd by ones widens
// pairs to the s32 lane of the block. Bounds that keep every step exact:
//   - Q4_0 / Q4_K nibbles u <= 15 against |x| <= 127 (Q8_0 and Q8_K
//     activations): a pair sum is at most 3810, so the eight products of a
//     half-group add up in s16 (<= 30480 < 32768) before one vpmaddwd;
//   - Q8_0 weights are signed: |w| (<= 128) against x * sign(w), a pair sum
//     at most 32512, widened by vpmaddwd word by word. The packed
//     offset_sum seeds (made for kernels that offset the weights) are not
//     used by this kernel.
//
// Batch invariance (gemm.h): every output element (row r, token t) owns one
// accumulator and sees the same instruction sequence for any tile shape; the
// R × T loops only decide which loads are shared. The integer sums are exact,
// so their order is free; the float steps per element are fixed.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_pack.h"
#include "backend/cpu/gemm_shape_table.h"
#include "backend/cpu/kernels_internal.h"
#include "backend/cpu/weight_layout.h"

#define TESSERA_INLINE [[gnu::always_inline]] inline

namespace tessera::cpu::detail {
namespace {

// Tile shapes measured on Zen 3 (bench/kernels_bench.cc, docs/quantization.md).
constexpr int kQuantRows = 4;
constexpr int kQuantTokens = 4;
// Prefill tiles (registers counted at AccMem).
constexpr int kQ4Rows = 2;
constexpr int kQ4Tokens = 4;
constexpr int kQ8Rows = 2;
constexpr int kQ8Tokens = 4;
constexpr int kQ4KRows = 2;  // Q4_K prefill: two s16 sums per element
constexpr int kQ4KTokens = 3;
// Q6_K prefill: 4 sums, the unpacked row, its scale vector and x leave room
// for the unpacking's temporaries; 2 x 4 spilled (111 stack accesses) and
// ran ~20% slower per CPU second (kernels_bench TESSERA_BENCH_TILE=RxT).
constexpr int kQ6KRows = 1;
constexpr int kQ6KTokens = 4;
// 12 accumulators, 3 weight vectors and the x vector fill the 16 ymm
// registers (4 x 3 would spill an accumulator into a store-load chain).
constexpr int kFloatRows = 3;
constexpr int kFloatTokens = 4;

template <typename T>
const T* advance(const T* p, int64_t bytes) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + bytes);
}

TESSERA_INLINE __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
TESSERA_INLINE __m256i load256_aligned(const void* p) {
  return _mm256_load_si256(static_cast<const __m256i*>(p));
}

// An empty asm that takes v in a register: a barrier to GCC's
// reassociation, which otherwise turns a fully unrolled chain of integer
// adds into a tree whose leaves (all products of a half-group) are live at
// once and spill.
TESSERA_INLINE void pin(__m256i& v) {
  asm("" : "+x"(v));
}

// Eight f16 scales from p, widened.
TESSERA_INLINE __m256 load_scales8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Fixed-order sum of the 8 lanes.
TESSERA_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- activation packing -----------------------------------------------------

void pack_q8x16(const float* x, PackedQ8x16Group* out, int64_t n, int32_t offset) {
  pack_q8x16_with(avx2_kernels().quantize_row_q8_0, x, out, n, offset);
}
void pack_q8k(const float* x, PackedQ8KGroup* out, int64_t n) {
  pack_q8k_with(avx2_kernels().quant->quantize_row_q8_k, x, out, n);
}

// ---- the 32-element formats (groups of 16 blocks) -----------------------------

// A full group's byte offsets: 16 f16 scales, then word k of block b at
// 32 + 64k + 4b.
constexpr int kScaleBytes16 = 32;
constexpr int kWordStride = 64;

// The last group of a row may hold blocks < 16 (weight_layout.h: its words
// are 4 * blocks bytes apart); copied into the full group's layout, the
// missing lanes zero (zero scales and quants: their products add exact
// zeros).
template <int kWords>
void expand_x16_group(const uint8_t* src, int blocks, uint8_t* dst) {
  std::memset(dst, 0, kScaleBytes16 + kWordStride * kWords);
  std::memcpy(dst, src, 2 * static_cast<size_t>(blocks));
  for (int k = 0; k < kWords; ++k) {
    std::memcpy(dst + kScaleBytes16 + kWordStride * k, src + 2 * blocks + 4 * blocks * k,
                4 * static_cast<size_t>(blocks));
  }
}

// acc[r][t] += Σ_lanes (block integer dot) * d_w * d_x for lanes 8h..8h+7.
TESSERA_INLINE __m256 apply_scales(__m256i isum, __m256 d_w, const float* d_x, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d_w, _mm256_load_ps(d_x)), acc);
}

// The f32 accumulators of an R × T tile, kept in memory: each is read and
// written once per half-group, while the inner loop over the quant words
// needs the 16 ymm registers for the integer sums, the unpacked weights and
// the activations (Q4_0 2 × 4: 8 sums, 4 nibble vectors, 2 activation
// vectors, the mask). Left to itself GCC keeps these accumulators in
// registers and spills the integer sums inside the inner loop instead
// (4 × 4: 287 stack accesses per call); fence() after each group keeps
// them in memory. The float steps per element are unchanged.
template <int R, int T>
struct AccMem {
  alignas(32) float v[R][T][8];
  TESSERA_INLINE void zero() {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) _mm256_store_ps(v[r][t], _mm256_setzero_ps());
    }
  }
  // acc[r][t] = apply_scales(isum, d_w, d_x, acc[r][t]).
  TESSERA_INLINE void update(int r, int t, __m256i isum, __m256 d_w, const float* d_x) {
    _mm256_store_ps(v[r][t], apply_scales(isum, d_w, d_x, _mm256_load_ps(v[r][t])));
  }
  // acc[r][t] = a * b + acc[r][t].
  TESSERA_INLINE void fma(int r, int t, __m256 a, __m256 b) {
    _mm256_store_ps(v[r][t], _mm256_fmadd_ps(a, b, _mm256_load_ps(v[r][t])));
  }
  TESSERA_INLINE void fence() {
    asm volatile("" : : "r"(&v[0][0][0]) : "memory");
  }
  TESSERA_INLINE float sum(int r, int t) const {
    return hsum(_mm256_load_ps(v[r][t]));
  }
};

// Q4_0: the nibbles are u = w + 8 (low nibble of byte j: element j, high:
// element 16 + j); the seed offset_sum (packed with kQ4Offset) cancels
// 8 * sum(x).
struct Q4Rows {
  static constexpr int kGroupBlocks = kX16Blocks;
  static constexpr int kBlockBytes = sizeof(BlockQ4_0);
  static constexpr int kBlockElems = kQuantBlockElems;
  static constexpr int kGroupBytes = kScaleBytes16 + kWordStride * 4;
  using Act = PackedQ8x16Group;
  static void expand(const uint8_t* src, int blocks, uint8_t* dst) { expand_x16_group<4>(src, blocks, dst); }

  template <int R, int T>
  TESSERA_INLINE static void half(const uint8_t* const* wg, const Act* const* xg, int h, AccMem<R, T>& acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i s[R][T];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m256i lo[R], hi[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256i v = load256(wg[r] + kScaleBytes16 + kWordStride * k + 32 * h);
        lo[r] = _mm256_and_si256(v, m4);
        hi[r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i xa = load256_aligned(xg[t]->q[k] + 32 * h);
        const __m256i xb = load256_aligned(xg[t]->q[k + 4] + 32 * h);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo[r], xa), _mm256_maddubs_epi16(hi[r], xb));
          s[r][t] = k == 0 ? p : _mm256_add_epi16(s[r][t], p);
          pin(s[r][t]);
        }
      }
    }
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 d_w = load_scales8(wg[r] + 16 * h);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i isum =
            _mm256_add_epi32(_mm256_madd_epi16(s[r][t], ones), load256_aligned(xg[t]->offset_sum + 8 * h));
        acc.update(r, t, isum, d_w, xg[t]->d + 8 * h);
      }
    }
  }
};

// Q8_0: signed weights; |w| times x with w's sign, word by word.
struct Q8Rows {
  static constexpr int kGroupBlocks = kX16Blocks;
  static constexpr int kBlockBytes = sizeof(BlockQ8_0);
  static constexpr int kBlockElems = kQuantBlockElems;
  static constexpr int kGroupBytes = kScaleBytes16 + kWordStride * 8;
  using Act = PackedQ8x16Group;
  static void expand(const uint8_t* src, int blocks, uint8_t* dst) { expand_x16_group<8>(src, blocks, dst); }

  template <int R, int T>
  TESSERA_INLINE static void half(const uint8_t* const* wg, const Act* const* xg, int h, AccMem<R, T>& acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i s[R][T];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i wv[R], aw[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        wv[r] = load256(wg[r] + kScaleBytes16 + kWordStride * k + 32 * h);
        aw[r] = _mm256_abs_epi8(wv[r]);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i xv = load256_aligned(xg[t]->q[k] + 32 * h);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw[r], _mm256_sign_epi8(xv, wv[r])), ones);
          s[r][t] = k == 0 ? p : _mm256_add_epi32(s[r][t], p);
          pin(s[r][t]);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 d_w = load_scales8(wg[r] + 16 * h);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc.update(r, t, s[r][t], d_w, xg[t]->d + 8 * h);
    }
  }
};

// ---- Q4_K (groups of 4 super-blocks; lane L = 64-element chunk L % 4 of
// super-block L / 4) ----------------------------------------------------------

// A full group's byte offsets: d[4], dmin[4] (f16), 16 3-byte lane entries,
// then word k of lane L at 64 + 64k + 4L.
constexpr int kQ4KDminOffset = 8;
constexpr int kQ4KEntryOffset = 16;
constexpr int kQ4KQuantOffset = 64;

void expand_q4_k_group(const uint8_t* src, int blocks, uint8_t* dst) {
  const auto b = static_cast<size_t>(blocks);
  const size_t lanes = 4 * b;
  std::memset(dst, 0, kQ4KQuantOffset + kWordStride * 8);
  std::memcpy(dst, src, 2 * b);                           // d
  std::memcpy(dst + kQ4KDminOffset, src + 2 * b, 2 * b);  // dmin
  std::memcpy(dst + kQ4KEntryOffset, src + 4 * b, 3 * lanes);
  for (size_t k = 0; k < 8; ++k) {
    std::memcpy(dst + kQ4KQuantOffset + kWordStride * k, src + 16 * b + 4 * lanes * k, 4 * lanes);
  }
}

// Lanes 8h..8h+7 of a row's group: d·sc of the even / odd sub-block of the
// lane's chunk and dmin·m of both.
struct Q4KScales {
  __m256 scale_lo, scale_hi, min_lo, min_hi;
};

TESSERA_INLINE Q4KScales load_q4_k_scales(const uint8_t* p, int h) {
  // Super-blocks 2h and 2h + 1: d and dmin to lanes 0..3 and 4..7.
  const __m256i to_lanes = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  uint32_t d2, dmin2;
  std::memcpy(&d2, p + 4 * h, 4);
  std::memcpy(&dmin2, p + kQ4KDminOffset + 4 * h, 4);
  const __m256 d =
      _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(d2)))), to_lanes);
  const __m256 dmin = _mm256_permutevar8x32_ps(
      _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dmin2)))), to_lanes);
  // The 3-byte entries of the 8 lanes (24 bytes) widened to 32 bits: the
  // low 128-bit half takes entries 0..3, the high half entries 4..7.
  const uint8_t* e = p + kQ4KEntryOffset + 24 * h;
  const __m256i raw = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(e + 12)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(e)));
  const __m256i ent = _mm256_shuffle_epi8(raw, _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1, 0,
                                                                1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
  const __m256i m6 = _mm256_set1_epi32(63);
  Q4KScales s;
  s.scale_lo = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(ent, m6)));
  s.scale_hi = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(ent, 6), m6)));
  s.min_lo = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(ent, 12), m6)));
  s.min_hi = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srli_epi32(ent, 18)));
  return s;
}

// Q4_K: per lane the two sub-blocks' integer dot products, then
// d·sc·Σq·x − dmin·m·Σx per sub-block and one FMA with d_x.
struct Q4KRows {
  static constexpr int kGroupBlocks = kX16SuperBlocks;
  static constexpr int kBlockBytes = sizeof(BlockQ4_K);
  static constexpr int kBlockElems = kSuperBlockElems;
  static constexpr int kGroupBytes = kQ4KQuantOffset + kWordStride * 8;
  using Act = PackedQ8KGroup;
  static void expand(const uint8_t* src, int blocks, uint8_t* dst) { expand_q4_k_group(src, blocks, dst); }

  template <int R, int T>
  TESSERA_INLINE static void half(const uint8_t* const* wg, const Act* const* xg, int h, AccMem<R, T>& acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i slo[R][T], shi[R][T];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i lo[R], hi[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256i v = load256(wg[r] + kQ4KQuantOffset + kWordStride * k + 32 * h);
        lo[r] = _mm256_and_si256(v, m4);
        hi[r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i xa = load256_aligned(xg[t]->lo[k] + 32 * h);
        const __m256i xb = load256_aligned(xg[t]->hi[k] + 32 * h);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const __m256i pl = _mm256_maddubs_epi16(lo[r], xa);
          const __m256i ph = _mm256_maddubs_epi16(hi[r], xb);
          slo[r][t] = k == 0 ? pl : _mm256_add_epi16(slo[r][t], pl);
          shi[r][t] = k == 0 ? ph : _mm256_add_epi16(shi[r][t], ph);
          pin(slo[r][t]);
          pin(shi[r][t]);
        }
      }
    }
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const Q4KScales sc = load_q4_k_scales(wg[r], h);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const Act& x = *xg[t];
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(slo[r][t], ones)), sc.scale_lo);
        v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(shi[r][t], ones)), sc.scale_hi, v);
        v = _mm256_fnmadd_ps(_mm256_load_ps(x.sum_lo + 8 * h), sc.min_lo, v);
        v = _mm256_fnmadd_ps(_mm256_load_ps(x.sum_hi + 8 * h), sc.min_hi, v);
        acc.fma(r, t, v, _mm256_load_ps(x.d + 8 * h));
      }
    }
  }
};

// Every quantized tile: per element, the half-group steps in order, then
// the fixed 8-lane reduction.
template <typename Rows, int R, int T>
void tile_quant(const uint8_t* w, int64_t w_stride, const typename Rows::Act* x, int64_t x_stride, int64_t n, float* y,
                int64_t y_stride) {
  using Act = typename Rows::Act;
  const int64_t nb = n / Rows::kBlockElems;
  const int64_t groups = (nb + Rows::kGroupBlocks - 1) / Rows::kGroupBlocks;
  const Act* xt[T];
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  AccMem<R, T> acc;
  acc.zero();
  alignas(32) uint8_t pad[R][Rows::kGroupBytes];  // a short last group, expanded
  for (int64_t g = 0; g < groups; ++g) {
    const int blocks = static_cast<int>(std::min<int64_t>(Rows::kGroupBlocks, nb - g * Rows::kGroupBlocks));
    const size_t offset = static_cast<size_t>(g) * Rows::kGroupBlocks * Rows::kBlockBytes;
    const uint8_t* wg[R];
    const Act* xg[T];
    for (int r = 0; r < R; ++r) {
      wg[r] = w + r * w_stride + offset;
      if (blocks < Rows::kGroupBlocks) {
        Rows::expand(wg[r], blocks, pad[r]);
        wg[r] = pad[r];
      }
    }
    for (int t = 0; t < T; ++t) xg[t] = xt[t] + g;
    Rows::template half<R, T>(wg, xg, 0, acc);
    Rows::template half<R, T>(wg, xg, 1, acc);
    acc.fence();
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = acc.sum(r, t);
  }
}

// ---- Q6_K (GGUF layout, plain Q8_K activations) -----------------------------

// Per element and super-block, the steps of this ISA's QuantKernels::dot_q6_k
// (q6_k_step in kernels_quant_simd.inc, AVX2 branch): u = the 6-bit codes of
// a 32-element chunk, vpmaddubsw against x (pair sums <= 2 * 63 * 127, no
// saturation), vpmaddwd by the chunk's two sub-block scales, the -32 offset
// as 32 * Σ sc_j · bsums_j; then one convert and one FMA with
// f16(d_w) * d_x. The integer sums are exact, so seeding them with the
// offset (q6_k_step subtracts it last) gives the same integers; the float
// steps are q6_k_step's, so a tile element has dot_q6_k's bits and the
// untiled path (decode, other ISAs' fallbacks) and this one agree exactly.
// No repacked layout: each chunk's 32 codes are already contiguous, and
// the unpacking is shared across the tile's T tokens.
template <int R, int T>
void tile_q6_k_rt(const uint8_t* w, int64_t w_stride, const BlockQ8_K* x, int64_t x_stride, int64_t n, float* y,
                  int64_t y_stride) {
  const BlockQ6_K* wr[R];
  const BlockQ8_K* xt[T];
  for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const BlockQ6_K*>(w + r * w_stride);
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  AccMem<R, T> acc;
  acc.zero();
  const __m256i m0f = _mm256_set1_epi8(0x0f);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  const int64_t nb = n / kSuperBlockElems;
  for (int64_t b = 0; b < nb; ++b) {
    __m256i s[R][T];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r][b].scales)));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i offset = _mm256_madd_epi16(load256(xt[t][b].bsums), sc16);
        s[r][t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));
      }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        // Low 128-bit lane: scale word 2c of the half (sub-block 8h + 2c);
        // high lane: word 2c + 1.
        const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * (2 * c + 1))),
                                              _mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * (2 * c))));
        __m256i u[R], sc[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const BlockQ6_K& blk = wr[r][b];
          const __m256i ql = load256(blk.ql + 64 * h + 32 * (c & 1));
          const __m256i qh = load256(blk.qh + 32 * h);
          const __m256i lo = _mm256_and_si256(c < 2 ? ql : _mm256_srli_epi16(ql, 4), m0f);
          // Bits 2c..2c+1 of qh to bits 4..5.
          const __m256i hi =
              _mm256_and_si256(c < 2 ? _mm256_slli_epi16(qh, 4 - 2 * c) : _mm256_srli_epi16(qh, 2 * c - 4), m30);
          u[r] = _mm256_or_si256(lo, hi);
          const __m256i scw = _mm256_broadcastsi128_si256(
              _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.scales + 8 * h))));
          sc[r] = _mm256_shuffle_epi8(scw, pick);
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m256i xv = load256(xt[t][b].qs + 128 * h + 32 * c);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            s[r][t] = _mm256_add_epi32(s[r][t], _mm256_madd_epi16(_mm256_maddubs_epi16(u[r], xv), sc[r]));
            pin(s[r][t]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const float d_w = _cvtsh_ss(wr[r][b].d);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc.fma(r, t, _mm256_cvtepi32_ps(s[r][t]), _mm256_set1_ps(d_w * xt[t][b].d));
    }
    acc.fence();
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = acc.sum(r, t);
  }
}

// ---- float weights ----------------------------------------------------------

enum class FloatKind { kF32, kF16, kBF16 };

// Eight weights from p widened to f32: F16 by vcvtph2ps (F16C), BF16 by a
// 16-bit shift into the high half.
template <FloatKind K, typename WT>
TESSERA_INLINE __m256 load_weights8(const WT* p) {
  if constexpr (K == FloatKind::kF32) {
    return _mm256_loadu_ps(p);
  } else if constexpr (K == FloatKind::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
}

// 8 elements per step into one accumulator per output (the x row is read
// by the FMA's memory operand, so R × T accumulators and R weight vectors
// fill the 16 registers), the last n % 8 elements as one step over
// zero-padded copies, then the fixed-order 8-lane reduction.
template <FloatKind K, int R, int T, typename WT>
void tile_float(const WT* w, int64_t w_stride, const float* x, int64_t x_stride, int64_t n, float* y,
                int64_t y_stride) {
  const WT* wr[R];
  const float* xt[T];
  for (int r = 0; r < R; ++r) wr[r] = advance(w, r * w_stride);
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const int64_t n8 = n / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8) {
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load_weights8<K>(wr[r] + i);
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(xt[t] + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (n8 < n) {
    const auto tail = static_cast<size_t>(n - n8);
    __m256 wv[R];
    for (int r = 0; r < R; ++r) {
      WT buf[8] = {};
      std::memcpy(buf, wr[r] + n8, tail * sizeof(WT));
      wv[r] = load_weights8<K>(buf);
    }
    for (int t = 0; t < T; ++t) {
      float buf[8] = {};
      std::memcpy(buf, xt[t] + n8, tail * sizeof(float));
      const __m256 xv = _mm256_loadu_ps(buf);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = hsum(acc[r][t]);
  }
}

// ---- dispatch on the run-time tile shape ------------------------------------

using QuantFn = void (*)(const uint8_t*, int64_t, const PackedQ8x16Group*, int64_t, int64_t, float*, int64_t);
using QuantKFn = void (*)(const uint8_t*, int64_t, const PackedQ8KGroup*, int64_t, int64_t, float*, int64_t);
using QuantQ6KFn = void (*)(const uint8_t*, int64_t, const BlockQ8_K*, int64_t, int64_t, float*, int64_t);
using FloatFn32 = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t);
using FloatFn16 = void (*)(const uint16_t*, int64_t, const float*, int64_t, int64_t, float*, int64_t);

template <int R, int T>
struct Q8Inst {
  static void run(const uint8_t* w, int64_t ws, const PackedQ8x16Group* x, int64_t xs, int64_t n, float* y,
                  int64_t ys) {
    tile_quant<Q8Rows, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct Q4Inst {
  static void run(const uint8_t* w, int64_t ws, const PackedQ8x16Group* x, int64_t xs, int64_t n, float* y,
                  int64_t ys) {
    tile_quant<Q4Rows, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct Q4KInst {
  static void run(const uint8_t* w, int64_t ws, const PackedQ8KGroup* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_quant<Q4KRows, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct Q6KInst {
  static void run(const uint8_t* w, int64_t ws, const BlockQ8_K* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_q6_k_rt<R, T>(w, ws, x, xs, n, y, ys);
  }
};

template <int R, int T>
struct F32Inst {
  static void run(const float* w, int64_t ws, const float* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_float<FloatKind::kF32, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct F16Inst {
  static void run(const uint16_t* w, int64_t ws, const float* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_float<FloatKind::kF16, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct BF16Inst {
  static void run(const uint16_t* w, int64_t ws, const float* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_float<FloatKind::kBF16, R, T>(w, ws, x, xs, n, y, ys);
  }
};

constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, Q8Inst> kQ8Tiles{};
constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, Q4Inst> kQ4Tiles{};
constexpr ShapeTable<QuantKFn, kQuantRows, kQuantTokens, Q4KInst> kQ4KTiles{};
constexpr ShapeTable<QuantQ6KFn, kQuantRows, kQuantTokens, Q6KInst> kQ6KTiles{};
constexpr ShapeTable<FloatFn32, kFloatRows, kFloatTokens, F32Inst> kF32Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, F16Inst> kF16Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, BF16Inst> kBF16Tiles{};

void tile_q8_0(const uint8_t* w, int64_t ws, int rows, const PackedQ8x16Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  kQ8Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_q4_0(const uint8_t* w, int64_t ws, int rows, const PackedQ8x16Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  kQ4Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_q4_k(const uint8_t* w, int64_t ws, int rows, const PackedQ8KGroup* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  kQ4KTiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_q6_k(const uint8_t* w, int64_t ws, int rows, const BlockQ8_K* x, int64_t xs, int tokens, int64_t n, float* y,
               int64_t ys) {
  kQ6KTiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}

void tile_f32(const float* w, int64_t ws, int rows, const float* x, int64_t xs, int tokens, int64_t n, float* y,
              int64_t ys) {
  kF32Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_f16(const uint16_t* w, int64_t ws, int rows, const float* x, int64_t xs, int tokens, int64_t n, float* y,
              int64_t ys) {
  kF16Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_bf16(const uint16_t* w, int64_t ws, int rows, const float* x, int64_t xs, int tokens, int64_t n, float* y,
               int64_t ys) {
  kBF16Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}

}  // namespace

const GemmKernels kGemmAvx2{
    .quant_rows = kQuantRows,
    .quant_tokens = kQuantTokens,
    .float_rows = kFloatRows,
    .float_tokens = kFloatTokens,
    .q4_k_rows = kQ4KRows,
    .q4_k_tokens = kQ4KTokens,
    .q8_0_rows = kQ8Rows,
    .q8_0_tokens = kQ8Tokens,
    .q4_0_rows = kQ4Rows,
    .q4_0_tokens = kQ4Tokens,
    .q6_k_rows = kQ6KRows,
    .q6_k_tokens = kQ6KTokens,
    .pack_q8x16 = pack_q8x16,
    .pack_q8k = pack_q8k,
    .tile_q8_0 = tile_q8_0,
    .tile_q4_0 = tile_q4_0,
    .tile_q4_k = tile_q4_k,
    .tile_q6_k = tile_q6_k,
    .tile_f32 = tile_f32,
    .tile_f16 = tile_f16,
    .tile_bf16 = tile_bf16,
    .pack_bf16 = nullptr,
    .tile_bf16_dp = nullptr,
};

}  // namespace tessera::cpu::detail
