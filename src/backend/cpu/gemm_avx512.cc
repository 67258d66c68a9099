// AVX-512 + VNNI tile kernels (gemm.h). Compiled with TESSERA_AVX512_FLAGS and
// only reached through kernels_for() after the CPUID check.
//
// Every output element (row r, token t) owns one 16-lane f32 accumulator and
// sees the same instruction sequence for any tile shape: the R × T loops
// below only decide which loads are shared. Nothing here may reorder a
// reduction depending on R or T (batch invariance, see gemm.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_i16_ref.h"
#include "backend/cpu/gemm_pack.h"
#include "backend/cpu/gemm_shape_table.h"
#include "backend/cpu/kernels_internal.h"
#include "backend/cpu/weight_layout.h"

namespace tessera::cpu::detail {
namespace {

constexpr int kQuantRows = 4;
constexpr int kQuantTokens = 4;
// Q4_K / Q5_K prefill (tile_k_x16_words): 2 x T x 2 integer sums (even / odd
// sub-blocks), R x T accumulators, the unpacked words: 2 x 4 fits.
constexpr int kQ4KRows = 2;
constexpr int kQ4KTokens = 4;
// Q5_K: the same registers plus the fifth bits; 2 x 4 measured fastest too
// (kernels_bench TESSERA_BENCH_TILE: 12.3 ms against 12.5-15.0 for 1 x 4,
// 2 x 3, 3 x 3, 3 x 4, 4 x 4 and 4 x 2).
constexpr int kQ5KRows = 2;
constexpr int kQ5KTokens = 4;
// Q6_K prefill: R x T lane sums (zmm), R unpacked halves (4 zmm each) and
// R x T 8-lane accumulators fit the 32 registers at 2 x 4.
constexpr int kQ6KRows = 2;
constexpr int kQ6KTokens = 4;
// Q3_K prefill (tile_q3_k_x16): 4 x 4 measured fastest although its sums
// and accumulators exceed the registers (kernels_bench TESSERA_BENCH_TILE,
// BM_Prefill64 1 thread: 10.5-10.8 ms against 11.3 for 2 x 4 and 4 x 3,
// 13.4 for 2 x 3).
constexpr int kQ3KRows = 4;
constexpr int kQ3KTokens = 4;
// Q2_K prefill (tile_k23_x16 without the third bits): 9.4 ms at 2 x 4
// against 10.0-11.2 for 4 x 3, 2 x 3, 3 x 4 and 4 x 4.
constexpr int kQ2KRows = 2;
constexpr int kQ2KTokens = 4;
constexpr int kFloatRows = 4;
constexpr int kFloatTokens = 6;

template <typename T>
const T* advance(const T* p, int64_t bytes) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + bytes);
}

// The R x T accumulators of a tile set to zero, and each reduced (the
// fixed 16-lane order of _mm512_reduce_add_ps) into y[t * y_stride + r].
// Inlined and unrolled so that acc is only ever indexed by constants:
// otherwise GCC keeps the array in memory and stores every accumulator each
// iteration.
template <int R, int T>
[[gnu::always_inline]] inline void zero_tile(__m512 (&acc)[R][T]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
}
template <int R, int T>
[[gnu::always_inline]] inline void store_tile(const __m512 (&acc)[R][T], float* y, int64_t y_stride) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// ---- activation packing ---------------------------------------------------

void pack_q8x16(const float* x, PackedQ8x16Group* out, int64_t n, int32_t offset) {
  pack_q8x16_with(avx512_kernels().quantize_row_q8_0, x, out, n, offset);
}
void pack_q8k(const float* x, PackedQ8KGroup* out, int64_t n) {
  pack_q8k_with(avx512_kernels().quant->quantize_row_q8_k, x, out, n);
}

// ---- quantized weights (x16 layout, weight_layout.h) ------------------------

// One group of `lanes` blocks of one weight row: the scales (and minima)
// widened to f32, the fifth-bit words and the quant words (lanes past
// `lanes` zero).
template <int kWords>
struct WeightGroup {
  __m512 d, m;
  __m512i qh;
  __m512i words[kWords];
};

// Stored word k of a group of `lanes` blocks at p whose blocks have kHead
// bytes of fields before their quants (weight_layout.h; lanes past `lanes`
// zero).
template <int kHead = 2>
__m512i load_word(const uint8_t* p, int lanes, int k) {
  if (lanes == kX16Blocks) return _mm512_loadu_si512(p + kHead * kX16Blocks + 64 * k);
  return _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << lanes) - 1u), p + kHead * lanes + 4 * lanes * k);
}
// The f16 field `at` bytes into each block's head (0: d; 2: Q4_1 / Q5_1's
// m), widened.
__m512 load_scales(const uint8_t* p, int lanes, int at = 0) {
  p += at * lanes;
  if (lanes == kX16Blocks) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << lanes) - 1u), p));
}
// The 32-bit field `at` bytes into each block's head (Q5_0 / Q5_1's qh).
__m512i load_head_words(const uint8_t* p, int lanes, int at) {
  p += at * lanes;
  if (lanes == kX16Blocks) return _mm512_loadu_si512(p);
  return _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << lanes) - 1u), p);
}

template <typename Rows>
WeightGroup<Rows::kWords> load_group(const uint8_t* p, int lanes) {
  WeightGroup<Rows::kWords> g;
  g.d = load_scales(p, lanes);
  g.m = Rows::kHasMin ? load_scales(p, lanes, 2) : _mm512_setzero_ps();
  g.qh = Rows::kHighAt != 0 ? load_head_words(p, lanes, Rows::kHighAt) : _mm512_setzero_si512();
  for (int k = 0; k < Rows::kWords; ++k) g.words[k] = load_word<Rows::kHead>(p, lanes, k);
  return g;
}

// 0x10 in byte i of dword v where bit i of v (0..15) is set: the fifth bits
// of four elements, placed by one vpermd (which reads an index's low four
// bits only).
constexpr int32_t fifth_bits_of(int v) {
  uint32_t e = 0;
  for (int i = 0; i < 4; ++i) e |= ((static_cast<uint32_t>(v) >> i) & 1u) << (8 * i + 4);
  return static_cast<int32_t>(e);
}
alignas(64) constexpr int32_t kFifthBits[16] = {
    fifth_bits_of(0),  fifth_bits_of(1),  fifth_bits_of(2),  fifth_bits_of(3), fifth_bits_of(4),  fifth_bits_of(5),
    fifth_bits_of(6),  fifth_bits_of(7),  fifth_bits_of(8),  fifth_bits_of(9), fifth_bits_of(10), fifth_bits_of(11),
    fifth_bits_of(12), fifth_bits_of(13), fifth_bits_of(14), fifth_bits_of(15)};

// The 32-element formats (x16 groups of 16 blocks, PackedQ8x16Group
// activations): dot gives each block's exact integer dot product in its own
// lane from Derived's unpacking (kParts unsigned words per stored word,
// part(word, qh, k, h) against x.q[x_word(k, h)]); the group step converts
// it and applies d_w * d_x with one FMA (and m_w * d_x * sum(x) with
// another for the formats with a minimum). Derived sets kHead (bytes of
// fields before a block's quants), kHasMin, kHighAt (offset of qh in the
// head, 0: none) and kSeeded (offset_sum seeds the integer sum; otherwise
// it is sum(x), packed with kSumOffset).
template <typename Derived, int W, int BlockBytes>
struct X16BlockRows {
  static constexpr int kWords = W;
  static constexpr int kBlockBytes = BlockBytes;
  static constexpr int kBlockElems = kQuantBlockElems;
  static constexpr int kGroupBlocks = kX16Blocks;
  static constexpr int kHead = 2;
  static constexpr bool kHasMin = false;
  static constexpr int kHighAt = 0;
  static constexpr bool kSeeded = true;
  using Act = PackedQ8x16Group;
  using Group = WeightGroup<W>;
  static Group load(const uint8_t* p, int blocks) { return load_group<Derived>(p, blocks); }
  static __m512i seed(const Act& x) {
    return Derived::kSeeded ? _mm512_load_si512(x.offset_sum) : _mm512_setzero_si512();
  }
  // Each block's exact integer dot product: the seed, then every part of
  // every stored word against its activation word (Derived::part, x_word).
  static __m512i dot(const Group& w, const Act& x) {
    __m512i acc = seed(x);
    for (int k = 0; k < kWords; ++k) {
      for (int h = 0; h < Derived::kParts; ++h) {
        acc = _mm512_dpbusd_epi32(acc, Derived::part(w.words[k], w.qh, k, h),
                                  _mm512_load_si512(x.q[Derived::x_word(k, h)]));
      }
    }
    return acc;
  }
  // The group step: d_w * d_x times the integer sums, then for the formats
  // with a minimum m_w times d_x * sum(x).
  static __m512 step(__m512i sums, __m512 d, __m512 m, const Act& x, __m512 acc) {
    const __m512 dx = _mm512_load_ps(x.d);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(d, dx), acc);
    if constexpr (Derived::kHasMin) {
      acc = _mm512_fmadd_ps(m, _mm512_mul_ps(dx, _mm512_cvtepi32_ps(_mm512_load_si512(x.offset_sum))), acc);
    }
    return acc;
  }
  static __m512 fma(const Group& w, const Act& x, __m512 acc) { return step(dot(w, x), w.d, w.m, x, acc); }
};

// Q8_0: u = w + 128 (xor of the sign bit); the excess 128 * sum(x) is
// cancelled by the seed offset_sum (packed with kQ8Offset). Zero lanes of a
// short group become u = 128 against x = 0: an exact 0.
struct Q8Rows : X16BlockRows<Q8Rows, 8, sizeof(BlockQ8_0)> {
  // Stored word k is one unsigned word, against x.q[k].
  static constexpr int kParts = 1;
  static __m512i part(__m512i word, __m512i, int, int) {
    return _mm512_xor_si512(word, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static int x_word(int k, int) { return k; }
};

// The nibble formats: stored word k holds two parts, its low nibbles
// against x.q[k], its high nibbles against x.q[k + 4].
template <typename Derived, int BlockBytes>
struct NibbleRows : X16BlockRows<Derived, 4, BlockBytes> {
  static constexpr int kParts = 2;
  static __m512i nibbles(__m512i word, int h) {
    return _mm512_and_si512(h == 0 ? word : _mm512_srli_epi16(word, 4), _mm512_set1_epi8(0x0f));
  }
  static __m512i part(__m512i word, __m512i, int, int h) { return nibbles(word, h); }
  static int x_word(int k, int h) { return k + 4 * h; }
};

// Q4_0: the nibbles are already u = w + 8 (low nibble of byte j: element j,
// high: element 16 + j); the seed (packed with kQ4Offset) cancels 8 * sum(x).
struct Q4Rows : NibbleRows<Q4Rows, sizeof(BlockQ4_0)> {};

// Q4_1: w = d * u + m, u the nibble; no seed, the minimum's term from sum(x).
struct Q41Rows : NibbleRows<Q41Rows, sizeof(BlockQ4_1)> {
  static constexpr int kHead = 4;
  static constexpr bool kHasMin = true;
  static constexpr bool kSeeded = false;
};

// The 5-bit formats: u = nibble | fifth bit << 4, the fifth bits of the
// part's four elements per lane (elements 16h + 4k + i, bits 16h + 4k + i of
// the block's qh) moved to bit 4 of their bytes by one vpermd.
template <typename Derived, int BlockBytes>
struct FiveBitRows : NibbleRows<Derived, BlockBytes> {
  static __m512i part(__m512i word, __m512i qh, int k, int h) {
    const __m512i bits = _mm512_permutexvar_epi32(_mm512_srli_epi32(qh, 16 * h + 4 * k), _mm512_load_si512(kFifthBits));
    return _mm512_or_si512(NibbleRows<Derived, BlockBytes>::nibbles(word, h), bits);
  }
};

// Q5_0: u = w + 16; the seed (packed with kQ5Offset) cancels 16 * sum(x).
struct Q50Rows : FiveBitRows<Q50Rows, sizeof(BlockQ5_0)> {
  static constexpr int kHead = 6;
  static constexpr int kHighAt = 2;
};

// Q5_1: w = d * u + m; no seed, the minimum's term from sum(x).
struct Q51Rows : FiveBitRows<Q51Rows, sizeof(BlockQ5_1)> {
  static constexpr int kHead = 8;
  static constexpr bool kHasMin = true;
  static constexpr int kHighAt = 4;
  static constexpr bool kSeeded = false;
};

// Every quantized tile: per element, the group steps (Rows::fma) in group
// order, then the fixed 16-lane reduction.
template <typename Rows, int R, int T>
void tile_quant(const uint8_t* w, int64_t w_stride, const typename Rows::Act* x, int64_t x_stride, int64_t n, float* y,
                int64_t y_stride) {
  const int64_t nb = n / Rows::kBlockElems;
  const int64_t groups = (nb + Rows::kGroupBlocks - 1) / Rows::kGroupBlocks;
  const typename Rows::Act* xt[T];
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  zero_tile(acc);
  for (int64_t g = 0; g < groups; ++g) {
    const int blocks = static_cast<int>(std::min<int64_t>(Rows::kGroupBlocks, nb - g * Rows::kGroupBlocks));
    const size_t offset = static_cast<size_t>(g) * Rows::kGroupBlocks * Rows::kBlockBytes;
    // Unrolled (as zero_tile / store_tile) so that acc stays in registers and
    // the R x T integer chains interleave: as loops GCC kept acc in memory
    // and ran one element's dependent vpdpbusd chain after another (a 4 x 2
    // tile took 3.7x the time of 4 x 1).
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const typename Rows::Group wg = Rows::load(w + r * w_stride + offset, blocks);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = Rows::fma(wg, xt[t][g], acc[r][t]);
    }
  }
  store_tile(acc, y, y_stride);
}

// The 32-element formats with several tokens: the same per-element
// arithmetic as tile_quant<Rows> (each block's exact integer dot product,
// seeded as Rows::seed, then Rows::step per group), but word by word over
// the whole tile: each weight word is unpacked once for all T tokens and
// each activation word loaded once for all R rows, where Rows::fma reloads
// the activation words for every row (loads, not vpdpbusd, bounded the 4 x 4
// tile: Q4_0 prefill +12-14%). Integer sums do not depend on their order,
// so every element keeps the 1 x 1 tile's bits.
template <typename Rows, int R, int T>
void tile_x16_words(const uint8_t* w, int64_t w_stride, const PackedQ8x16Group* x, int64_t x_stride, int64_t n,
                    float* y, int64_t y_stride) {
  const int64_t nb = n / kQuantBlockElems;
  const int64_t groups = (nb + kX16Blocks - 1) / kX16Blocks;
  const PackedQ8x16Group* xt[T];
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  zero_tile(acc);
  for (int64_t g = 0; g < groups; ++g) {
    const int lanes = static_cast<int>(std::min<int64_t>(kX16Blocks, nb - g * kX16Blocks));
    const size_t offset = static_cast<size_t>(g) * kX16Blocks * Rows::kBlockBytes;
    auto group = [&](int r) { return w + r * w_stride + offset; };
    __m512i s[R][T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512i seed = Rows::seed(xt[t][g]);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) s[r][t] = seed;
    }
    __m512i qh[R];  // the fifth bits (5-bit formats only)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      qh[r] = Rows::kHighAt != 0 ? load_head_words(group(r), lanes, Rows::kHighAt) : _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int k = 0; k < Rows::kWords; ++k) {
      __m512i wv[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) wv[r] = load_word<Rows::kHead>(group(r), lanes, k);
#pragma GCC unroll 2
      for (int h = 0; h < Rows::kParts; ++h) {
        __m512i u[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) u[r] = Rows::part(wv[r], qh[r], k, h);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m512i xv = _mm512_load_si512(xt[t][g].q[Rows::x_word(k, h)]);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) s[r][t] = _mm512_dpbusd_epi32(s[r][t], u[r], xv);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 d = load_scales(group(r), lanes);
      const __m512 m = Rows::kHasMin ? load_scales(group(r), lanes, 2) : _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = Rows::step(s[r][t], d, m, xt[t][g], acc[r][t]);
    }
  }
  store_tile(acc, y, y_stride);
}

// ---- Q4_K (x16 layout: groups of 4 super-blocks, lanes = 64-element chunks) ----

// One row's group of `blocks` super-blocks, per lane: the sub-block scale
// factors d·sc (even / odd sub-block) and dmin·m.
struct Q4KScales {
  __m512 scale_lo, scale_hi, min_lo, min_hi;
};

[[gnu::always_inline]] inline Q4KScales load_q4_k_scales(const uint8_t* p, int blocks) {
  Q4KScales g;
  const auto block_mask = static_cast<__mmask8>((1u << blocks) - 1u);
  const int lanes = 4 * blocks;
  // d and dmin of block s to lanes 4s..4s+3.
  const __m512i to_lanes = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m128 d4 = _mm_cvtph_ps(_mm_maskz_loadu_epi16(block_mask, p));
  const __m128 dmin4 = _mm_cvtph_ps(_mm_maskz_loadu_epi16(block_mask, p + 2 * blocks));
  const __m512 d = _mm512_permutexvar_ps(to_lanes, _mm512_castps128_ps512(d4));
  const __m512 dmin = _mm512_permutexvar_ps(to_lanes, _mm512_castps128_ps512(dmin4));
  // The 3-byte lane entries widened to 32 bits: 128-bit lane q takes the
  // 12 bytes of entries 4q..4q+3 (dwords 3q..3q+2), then bytes 3m..3m+2
  // become dword m.
  const __m512i raw = _mm512_maskz_loadu_epi8((__mmask64{1} << (3 * lanes)) - 1, p + 4 * blocks);
  const __m512i spread =
      _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11), raw);
  const __m512i e = _mm512_shuffle_epi8(
      spread, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1)));
  const __m512i m6 = _mm512_set1_epi32(63);
  g.scale_lo = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(e, m6)));
  g.scale_hi = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(e, 6), m6)));
  g.min_lo = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(e, 12), m6)));
  g.min_hi = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(e, 18)));
  return g;
}

// Quant word k (of 8) of a row's group of `blocks` super-blocks at p: lane
// L holds bytes 4k..4k+3 of chunk L's 32 (lanes past 4 * blocks zero).
template <bool kFive>
__m512i load_k_word(const uint8_t* p, int blocks, int k) {
  const uint8_t* q = p + x16_k_head_bytes(kFive) * blocks;
  if (blocks == kX16SuperBlocks) return _mm512_loadu_si512(q + 64 * k);
  const int lanes = 4 * blocks;
  return _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << lanes) - 1u), q + 4 * lanes * k);
}

// Q5_K: the lanes' fifth-bit words of the even (h = 0) or odd (h = 1)
// sub-block of a row's group (weight_layout.h; lanes past 4 * blocks zero).
__m512i load_q5_k_high(const uint8_t* p, int blocks, int h) {
  const uint8_t* q = p + 16 * blocks * (1 + h);
  if (blocks == kX16SuperBlocks) return _mm512_loadu_si512(q);
  return _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << (4 * blocks)) - 1u), q);
}

// Part h (0: low nibbles, even sub-block; 1: high nibbles, odd) of quant
// word k as unsigned bytes: the nibbles, with Q5_K's fifth bits (bits
// 4k..4k+3 of the lane's word qh) in bit 4 by one vpermd, as FiveBitRows.
template <bool kFive>
__m512i k_part(__m512i word, __m512i qh, int k, int h) {
  const __m512i nib = _mm512_and_si512(h == 0 ? word : _mm512_srli_epi16(word, 4), _mm512_set1_epi8(0x0f));
  if constexpr (!kFive) return nib;
  return _mm512_or_si512(nib, _mm512_permutexvar_epi32(_mm512_srli_epi32(qh, 4 * k), _mm512_load_si512(kFifthBits)));
}

// The float steps of one group for one element: per lane
// d·sc·Σq·x − dmin·m·Σx for both sub-blocks, then one FMA with d_x; lo / hi
// are the lanes' exact integer sums of the even / odd sub-block.
__m512 q4_k_group_step(const Q4KScales& w, __m512i lo, __m512i hi, const PackedQ8KGroup& x, __m512 acc) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(lo), w.scale_lo);
  v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), w.scale_hi, v);
  v = _mm512_fnmadd_ps(_mm512_load_ps(x.sum_lo), w.min_lo, v);
  v = _mm512_fnmadd_ps(_mm512_load_ps(x.sum_hi), w.min_hi, v);
  return _mm512_fmadd_ps(v, _mm512_load_ps(x.d), acc);
}

// One row's group of `blocks` super-blocks: its scales, 8 quant words and
// (Q5_K) the fifth-bit words of both sub-blocks.
struct KGroup {
  Q4KScales scales;
  __m512i words[8];
  __m512i qh[2];
};

// Q4_K / Q5_K: per lane the two sub-blocks' integer dot products, then
// q4_k_group_step.
template <bool kFive_>
struct KX16Rows {
  static constexpr bool kFive = kFive_;
  static constexpr int kBlockBytes = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr int kBlockElems = kSuperBlockElems;
  static constexpr int kGroupBlocks = kX16SuperBlocks;
  using Act = PackedQ8KGroup;
  using Group = KGroup;
  static Group load(const uint8_t* p, int blocks) {
    Group g;
    g.scales = load_q4_k_scales(p, blocks);
    for (int k = 0; k < 8; ++k) g.words[k] = load_k_word<kFive>(p, blocks, k);
    for (int h = 0; h < 2; ++h) g.qh[h] = kFive ? load_q5_k_high(p, blocks, h) : _mm512_setzero_si512();
    return g;
  }
  static __m512 fma(const Group& w, const Act& x, __m512 acc) {
    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    for (int k = 0; k < 8; ++k) {
      lo = _mm512_dpbusd_epi32(lo, k_part<kFive>(w.words[k], w.qh[0], k, 0), _mm512_load_si512(x.lo[k]));
      hi = _mm512_dpbusd_epi32(hi, k_part<kFive>(w.words[k], w.qh[1], k, 1), _mm512_load_si512(x.hi[k]));
    }
    return q4_k_group_step(w.scales, lo, hi, x, acc);
  }
};

// Q4_K / Q5_K with several tokens: tile_quant<KX16Rows>'s per-element
// arithmetic (each lane's two exact sub-block sums, then q4_k_group_step),
// word by word over the whole tile as tile_x16_words does for Q8_0 / Q4_0:
// each weight word is unpacked once for all T tokens and each activation
// word loaded once for all R rows (tile_quant unpacked and reloaded them
// per element). Integer sums do not depend on their order, so every shape
// keeps the 1 x 1 tile's bits.
template <bool kFive, int R, int T>
void tile_k_x16_words(const uint8_t* w, int64_t w_stride, const PackedQ8KGroup* x, int64_t x_stride, int64_t n,
                      float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = KX16Rows<kFive>::kBlockBytes;
  const int64_t nb = n / kSuperBlockElems;
  const int64_t groups = (nb + kX16SuperBlocks - 1) / kX16SuperBlocks;
  const PackedQ8KGroup* xt[T];
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  zero_tile(acc);
  for (int64_t g = 0; g < groups; ++g) {
    const int blocks = static_cast<int>(std::min<int64_t>(kX16SuperBlocks, nb - g * kX16SuperBlocks));
    const size_t offset = static_cast<size_t>(g) * kX16SuperBlocks * kBlockBytes;
    auto group = [&](int r) { return w + r * w_stride + offset; };
    __m512i sums[2][R][T];  // [even / odd sub-block]: low / high nibbles
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) sums[h][r][t] = _mm512_setzero_si512();
      }
    }
    __m512i qh[R][2];  // Q5_K: each row's fifth-bit words of both sub-blocks
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) qh[r][h] = kFive ? load_q5_k_high(group(r), blocks, h) : _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m512i wv[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) wv[r] = load_k_word<kFive>(group(r), blocks, k);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m512i part[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) part[r] = k_part<kFive>(wv[r], qh[r][h], k, h);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m512i xv = _mm512_load_si512(h == 0 ? xt[t][g].lo[k] : xt[t][g].hi[k]);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) sums[h][r][t] = _mm512_dpbusd_epi32(sums[h][r][t], part[r], xv);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Q4KScales sc = load_q4_k_scales(group(r), blocks);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = q4_k_group_step(sc, sums[0][r][t], sums[1][r][t], xt[t][g], acc[r][t]);
    }
  }
  store_tile(acc, y, y_stride);
}

// ---- Q2_K / Q3_K (x16 layout: k23_x16_avx512.inc) ---------------------------

#include "backend/cpu/k23_x16_avx512.inc"

// ---- Q6_K (GGUF layout, plain Q8_K activations) -----------------------------

#include "backend/cpu/hsum_ps.inc"  // dot_q6_k's last step
#include "backend/cpu/q6_k_avx512.inc"

// Per element and super-block, the exact integer lane sums of this ISA's
// QuantKernels::dot_q6_k (q6_k_avx512.inc), each half of a weight
// super-block unpacked once for the tile's T tokens and each activation
// vector shared by its R rows; then q6_k_step's float steps (one convert
// and one FMA with f16(d_w) * d_x per super-block into an 8-lane
// accumulator) and hsum_ps's reduction. So every tile shape gives
// dot_q6_k's bits (Gemm.Q6KTileMatchesDotProduct), as on AVX2.
template <int R, int T>
void tile_q6_k_rt(const uint8_t* w, int64_t w_stride, const BlockQ8_K* x, int64_t x_stride, int64_t n, float* y,
                  int64_t y_stride) {
  const BlockQ6_K* wr[R];
  const BlockQ8_K* xt[T];
  for (int r = 0; r < R; ++r) wr[r] = advance(reinterpret_cast<const BlockQ6_K*>(w), r * w_stride);
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m256 acc[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const int64_t nb = n / kSuperBlockElems;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i scw[R];
    __m512i s[R][T];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      scw[r] = q6_k_scale_words(wr[r][b]);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) s[r][t] = _mm512_setzero_si512();
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      Q6KHalf q[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) q[r] = q6_k_half(wr[r][b], scw[r], h);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) s[r][t] = q6_k_half_dot(q[r], xt[t][b].qs + 128 * h, s[r][t]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const float d_w = _cvtsh_ss(wr[r][b].d);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q6_k_block_sums(s[r][t], scw[r], xt[t][b])),
                                    _mm256_set1_ps(d_w * xt[t][b].d), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = hsum_ps(acc[r][t]);
  }
}

// ---- float weights --------------------------------------------------------

__m512 load_w(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
__m512 load_w(const uint16_t* p, __mmask16 m, bool bf16) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

enum class FloatKind { kF32, kF16, kBF16 };

template <FloatKind K, typename WT>
__m512 load_weights(const WT* p, __mmask16 m) {
  if constexpr (K == FloatKind::kF32) {
    return load_w(p, m);
  } else {
    return load_w(p, m, K == FloatKind::kBF16);
  }
}

// 16 elements per step into one accumulator per output, a masked last step,
// then the fixed-order 16-lane reduction.
template <FloatKind K, int R, int T, typename WT>
void tile_float(const WT* w, int64_t w_stride, const float* x, int64_t x_stride, int64_t n, float* y,
                int64_t y_stride) {
  const WT* wr[R];
  const float* xt[T];
  for (int r = 0; r < R; ++r) wr[r] = advance(w, r * w_stride);
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  zero_tile(acc);
  // The main loop's loads are plain ones and only the tail's are masked: a
  // run-time mask on every load (all ones but for the tail) ran the
  // one-token tile at half speed on Zen 5. An all-ones masked load is the
  // plain load, so the bits are the same. (The step is written out twice:
  // as a lambda GCC kept acc in memory and halved the prefill tiles.)
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_weights<K>(wr[r] + i, static_cast<__mmask16>(0xffff));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_loadu_ps(xt[t] + i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_weights<K>(wr[r] + i, m);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, xt[t] + i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  store_tile(acc, y, y_stride);
}

// ---- dispatch on the run-time tile shape ------------------------------------

using QuantFn = void (*)(const uint8_t*, int64_t, const PackedQ8x16Group*, int64_t, int64_t, float*, int64_t);
using QuantKFn = void (*)(const uint8_t*, int64_t, const PackedQ8KGroup*, int64_t, int64_t, float*, int64_t);
using QuantQ6KFn = void (*)(const uint8_t*, int64_t, const BlockQ8_K*, int64_t, int64_t, float*, int64_t);
using FloatFn32 = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t);
using FloatFn16 = void (*)(const uint16_t*, int64_t, const float*, int64_t, int64_t, float*, int64_t);

// The x16 formats: tile_quant for one token; for more, word by word over
// the tile (tile_k_x16_words for Q4_K / Q5_K, tile_x16_words for the
// 32-element formats).
template <typename Rows>
struct X16Inst {
  template <int R, int T>
  struct Of {
    static void run(const uint8_t* w, int64_t ws, const typename Rows::Act* x, int64_t xs, int64_t n, float* y,
                    int64_t ys) {
      if constexpr (T == 1) {
        tile_quant<Rows, R, T>(w, ws, x, xs, n, y, ys);
      } else if constexpr (std::is_same_v<typename Rows::Act, PackedQ8KGroup>) {
        tile_k_x16_words<Rows::kFive, R, T>(w, ws, x, xs, n, y, ys);
      } else {
        tile_x16_words<Rows, R, T>(w, ws, x, xs, n, y, ys);
      }
    }
  };
};
template <bool kTwo>
struct K23X16Inst {
  template <int R, int T>
  struct Of {
    static void run(const uint8_t* w, int64_t ws, const PackedQ8KGroup* x, int64_t xs, int64_t n, float* y,
                    int64_t ys) {
      tile_k23_x16<kTwo, R, T>(w, ws, x, xs, n, y, ys);
    }
  };
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

constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, X16Inst<Q8Rows>::Of> kQ8Tiles{};
constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, X16Inst<Q4Rows>::Of> kQ4Tiles{};
constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, X16Inst<Q41Rows>::Of> kQ41Tiles{};
constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, X16Inst<Q50Rows>::Of> kQ50Tiles{};
constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, X16Inst<Q51Rows>::Of> kQ51Tiles{};
constexpr ShapeTable<QuantKFn, kQuantRows, kQuantTokens, X16Inst<KX16Rows<false>>::Of> kQ4KTiles{};
constexpr ShapeTable<QuantKFn, kQuantRows, kQuantTokens, X16Inst<KX16Rows<true>>::Of> kQ5KTiles{};
constexpr ShapeTable<QuantQ6KFn, kQuantRows, kQuantTokens, Q6KInst> kQ6KTiles{};
constexpr ShapeTable<QuantKFn, kQuantRows, kQuantTokens, K23X16Inst<true>::Of> kQ2KTiles{};
constexpr ShapeTable<QuantKFn, kQuantRows, kQuantTokens, K23X16Inst<false>::Of> kQ3KTiles{};
constexpr ShapeTable<FloatFn32, kFloatRows, kFloatTokens, F32Inst> kF32Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, F16Inst> kF16Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, BF16Inst> kBF16Tiles{};

constexpr auto tile_q8_0 = tile_entry<kQ8Tiles, uint8_t, PackedQ8x16Group>;
constexpr auto tile_q4_0 = tile_entry<kQ4Tiles, uint8_t, PackedQ8x16Group>;
constexpr auto tile_q4_1 = tile_entry<kQ41Tiles, uint8_t, PackedQ8x16Group>;
constexpr auto tile_q5_0 = tile_entry<kQ50Tiles, uint8_t, PackedQ8x16Group>;
constexpr auto tile_q5_1 = tile_entry<kQ51Tiles, uint8_t, PackedQ8x16Group>;
constexpr auto tile_q4_k = tile_entry<kQ4KTiles, uint8_t, PackedQ8KGroup>;
constexpr auto tile_q5_k = tile_entry<kQ5KTiles, uint8_t, PackedQ8KGroup>;
constexpr auto tile_q6_k = tile_entry<kQ6KTiles, uint8_t, BlockQ8_K>;
constexpr auto tile_q2_k = tile_entry<kQ2KTiles, uint8_t, PackedQ8KGroup>;
constexpr auto tile_q3_k = tile_entry<kQ3KTiles, uint8_t, PackedQ8KGroup>;
constexpr auto tile_f32 = tile_entry<kF32Tiles, float, float>;
constexpr auto tile_f16 = tile_entry<kF16Tiles, uint16_t, float>;
constexpr auto tile_bf16 = tile_entry<kBF16Tiles, uint16_t, float>;

// ---- F16 weights as int16 panels (weight_layout.h, gemm_i16_ref.h) ---------
//
// For AVX-512 CPUs without AVX512-BF16 (Cascade Lake, Ice Lake; Skylake-SP has
// no AVX512-VNNI and takes the AVX2 table):
// panels of 16 rows, one s32 lane per row; vpdpwssd (AVX512-VNNI) adds each
// lane's two products of a column pair to its group sum exactly, 32 products
// per instruction against the f32 FMA's 16. The group sums and the float
// steps per group are those of the AVX2 tile (gemm_avx2.inc), so the bits
// are the same as there and as dot_i16_ref. Tables with AVX512-BF16 keep the
// bf16 panels for F16 (prepare_matrix prefers them): on Zen 4 vpdpwssd and
// vdpbf16ps issue at the same rate, and the bf16 tile has no per-group step.

constexpr int kI16PanelRows = 16;
// Prefill tile: 12 sums, 12 f32 accumulators, 2 weight vectors and the
// broadcast pair in the 32 zmm registers (3 x 4, 4 x 3 and 2 x 4 measured
// the same within this VM's noise, BM_Prefill64 with TESSERA_BENCH_NO_BF16=1).
constexpr int kI16Panels = 2;
constexpr int kI16Tokens = 6;
constexpr int kI16StreamPanels = 4;  // decode: one token, four panel streams

void quantize_i16(const float* x, int16_t* q, float* d, int64_t n, int32_t qmax) {
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  const __m512i hi = _mm512_set1_epi32(qmax), lo = _mm512_set1_epi32(-qmax);
  for (int64_t g = 0; g < n / kI16GroupCols; ++g) {
    const float* v = x + g * kI16GroupCols;
    int16_t* qg = q + g * kI16GroupCols;
    __m512 vv[4];
    __m512 m = _mm512_setzero_ps();
    __mmask16 finite = 0xffff;
    for (int i = 0; i < 4; ++i) {
      vv[i] = _mm512_loadu_ps(v + 16 * i);
      const __m512 a = _mm512_abs_ps(vv[i]);
      m = _mm512_max_ps(m, a);
      finite &= _mm512_cmp_ps_mask(a, inf, _CMP_LT_OQ);
    }
    const float mx = _mm512_reduce_max_ps(m);
    const bool all_finite = finite == 0xffff;
    const float inv = static_cast<float>(qmax) / mx;
    if (!all_finite || !(inv < __builtin_inff())) {
      std::memset(qg, 0, sizeof(int16_t) * kI16GroupCols);
      d[g] = all_finite ? 0.0f : __builtin_nanf("");
      continue;
    }
    const __m512 vinv = _mm512_set1_ps(inv);
    for (int i = 0; i < 4; ++i) {
      const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vv[i], vinv)), lo), hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qg + 16 * i), _mm512_cvtepi32_epi16(r));
    }
    d[g] = mx / static_cast<float>(qmax);
  }
}

template <int P, int T>
void tile_i16_pt(const int16_t* w, int64_t ps, const float* ws, int64_t wss, const uint8_t* x, int64_t xs, int64_t n,
                 float* y, int64_t ys, int64_t yps) {
  constexpr int kPairs = kI16GroupCols / 2;  // column pairs per group
  const int64_t groups = n / kI16GroupCols;
  const int16_t* wp[P];
  const float* dp[P];
  for (int p = 0; p < P; ++p) {
    wp[p] = reinterpret_cast<const int16_t*>(reinterpret_cast<const uint8_t*>(w) + p * ps);
    dp[p] = ws + p * wss;
  }
  const int32_t* xq[T];  // the activation pairs
  const float* xd[T];    // the group scales
  for (int t = 0; t < T; ++t) {
    xq[t] = reinterpret_cast<const int32_t*>(x + t * xs);
    xd[t] = reinterpret_cast<const float*>(x + t * xs + n * 2);
  }
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i s[P][T];
    for (int p = 0; p < P; ++p) {
      for (int t = 0; t < T; ++t) s[p][t] = _mm512_setzero_si512();
    }
    const int64_t k0 = g * kPairs;
#pragma GCC unroll 2
    for (int k = 0; k < kPairs; ++k) {
      __m512i wv[P];
      for (int p = 0; p < P; ++p) wv[p] = _mm512_loadu_si512(wp[p] + (k0 + k) * 2 * kI16PanelRows);
      for (int t = 0; t < T; ++t) {
        const __m512i b = _mm512_set1_epi32(xq[t][k0 + k]);
        for (int p = 0; p < P; ++p) s[p][t] = _mm512_dpwssd_epi32(s[p][t], wv[p], b);
      }
    }
    for (int p = 0; p < P; ++p) {
      const __m512 d_w = _mm512_loadu_ps(dp[p] + g * kI16PanelRows);
      for (int t = 0; t < T; ++t) {
        const __m512 scale = _mm512_mul_ps(d_w, _mm512_set1_ps(xd[t][g]));
        acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[p][t]), scale, acc[p][t]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ys + p * yps, acc[p][t]);
  }
}

template <int P, int T>
struct I16Inst {
  static void run(const int16_t* w, int64_t ps, const float* ws, int64_t wss, const uint8_t* x, int64_t xs, int64_t n,
                  float* y, int64_t ys, int64_t yps) {
    tile_i16_pt<P, T>(w, ps, ws, wss, x, xs, n, y, ys, yps);
  }
};
using I16Fn = void (*)(const int16_t*, int64_t, const float*, int64_t, const uint8_t*, int64_t, int64_t, float*,
                       int64_t, int64_t);
constexpr ShapeTable<I16Fn, kI16StreamPanels, kI16Tokens, I16Inst> kI16Tiles{};

void tile_i16(const int16_t* w, int64_t ps, const float* ws, int64_t wss, int panels, const uint8_t* x, int64_t xs,
              int tokens, int64_t n, float* y, int64_t ys, int64_t yps) {
  kI16Tiles.fn[panels - 1][tokens - 1](w, ps, ws, wss, x, xs, n, y, ys, yps);
}

}  // namespace

const GemmKernels kGemmAvx512{
    .quant_rows = kQuantRows,
    .quant_tokens = kQuantTokens,
    .float_rows = kFloatRows,
    .float_tokens = kFloatTokens,
    .q4_k_rows = kQ4KRows,
    .q4_k_tokens = kQ4KTokens,
    .q5_k_rows = kQ5KRows,
    .q5_k_tokens = kQ5KTokens,
    .q8_0_rows = kQuantRows,
    .q8_0_tokens = kQuantTokens,
    .q4_0_rows = kQuantRows,
    .q4_0_tokens = kQuantTokens,
    .q6_k_rows = kQ6KRows,
    .q6_k_tokens = kQ6KTokens,
    .q2_k_rows = kQ2KRows,
    .q2_k_tokens = kQ2KTokens,
    .q3_k_rows = kQ3KRows,
    .q3_k_tokens = kQ3KTokens,
    .q5_k_decode_rows = kQuantRows,
    .q6_k_decode_rows = kQuantRows,
    .q3_k_decode_rows = kQuantRows,
    .pack_q8x16 = pack_q8x16,
    .pack_q8k = pack_q8k,
    .tile_q8_0 = tile_q8_0,
    .tile_q4_0 = tile_q4_0,
    .tile_q4_k = tile_q4_k,
    .tile_q5_k = tile_q5_k,
    .tile_q6_k = tile_q6_k,
    .tile_q2_k = tile_q2_k,
    .tile_q3_k = tile_q3_k,
    .tile_q4_1 = tile_q4_1,
    .tile_q5_0 = tile_q5_0,
    .tile_q5_1 = tile_q5_1,
    .tile_f32 = tile_f32,
    .tile_f16 = tile_f16,
    .tile_bf16 = tile_bf16,
    .pack_bf16 = nullptr,
    .tile_bf16_dp = nullptr,
    .tile_bf16_dp_part = nullptr,
    .bf16_panels = 0,
    .bf16_tokens = 0,
    .quantize_i16 = quantize_i16,
    .tile_i16 = tile_i16,
    .i16_panel_rows = kI16PanelRows,
    .i16_panels = kI16Panels,
    .i16_tokens = kI16Tokens,
    .i16_stream_panels = kI16StreamPanels,
    .widen_f16 = nullptr,
    .widen_bf16 = nullptr,
};

// The same set with the AVX512-BF16 kernel for BF16 weights
// (gemm_bf16_avx512.cc).
const GemmKernels kGemmAvx512Bf16 = [] {
  GemmKernels g = kGemmAvx512;
  g.pack_bf16 = pack_bf16_avx512;
  g.tile_bf16_dp = tile_bf16_dp_avx512;
  g.tile_bf16_dp_part = tile_bf16_dp_part_avx512;
  g.bf16_panels = kBf16DpPanels;
  g.bf16_tokens = kBf16DpTokens;
  return g;
}();

}  // namespace tessera::cpu::detail
