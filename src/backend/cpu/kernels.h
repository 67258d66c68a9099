// CPU kernel table: one set of function pointers per SIMD path (scalar,
// AVX2+FMA+F16C, AVX-512 with VNNI), chosen at run time. The scalar path is
// the reference every other path is tested against (tests/backend).
//
// Conventions: `n` counts elements; quantized rows need n % 32 == 0. Weight
// rows are in the layout GGUF stores them (core/dtype.h). No kernel allocates.
#pragma once

#include <cstdint>

#include "backend/cpu/gemm.h"
#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/rope_style.h"

namespace tessera::cpu {

using tessera::RopeStyle;  // core/rope_style.h

// Weight rows per Kernels::dot_rows_* call.
inline constexpr int kDotRows = 4;

// Integer dot products of the formats added for quantization (issue #7),
// one set per ISA (kernels_quant_*.cc). The 32-element formats pair with Q8_0
// activations, the K-quants with Q8_K (dtype_vec_dot_type); n must be a
// multiple of the weight's block size. SIMD results agree with the scalar
// set to f32 rounding (the integer sums are exact; only the order of the
// float accumulation differs).
struct QuantKernels {
  float (*dot_q4_1)(const BlockQ4_1* w, const BlockQ8_0* x, int64_t n);
  float (*dot_q5_0)(const BlockQ5_0* w, const BlockQ8_0* x, int64_t n);
  float (*dot_q5_1)(const BlockQ5_1* w, const BlockQ8_0* x, int64_t n);
  float (*dot_q2_k)(const BlockQ2_K* w, const BlockQ8_K* x, int64_t n);
  float (*dot_q3_k)(const BlockQ3_K* w, const BlockQ8_K* x, int64_t n);
  float (*dot_q4_k)(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n);
  float (*dot_q5_k)(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n);
  float (*dot_q6_k)(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n);
  // kDotRows rows `row_stride` bytes apart against one Q8_K row, super-block
  // by super-block; out[r] bit-identical to the single-row dot of row r
  // (decode reads the rows as concurrent streams, see matmul.cc).
  void (*dot_rows_q4_k)(const BlockQ4_K* w, int64_t row_stride, const BlockQ8_K* x, int64_t n, float* out);
  void (*dot_rows_q5_k)(const BlockQ5_K* w, int64_t row_stride, const BlockQ8_K* x, int64_t n, float* out);
  void (*dot_rows_q6_k)(const BlockQ6_K* w, int64_t row_stride, const BlockQ8_K* x, int64_t n, float* out);
  // x[n] -> y[n/256]; bit-identical to quantize_row_q8_k_ref on every ISA.
  void (*quantize_row_q8_k)(const float* x, BlockQ8_K* y, int64_t n);
};

// Keys per attn_qk_*_kt call.
inline constexpr int kAttnKeys = 16;

struct Kernels {
  Isa isa;

  // Dot products of a weight row with an activation row, accumulated in f32.
  float (*dot_f32)(const float* w, const float* x, int64_t n);
  float (*dot_f16)(const uint16_t* w, const float* x, int64_t n);
  float (*dot_bf16)(const uint16_t* w, const float* x, int64_t n);
  // Integer dot products against activations quantized to Q8_0 (x[n/32]).
  float (*dot_q8_0)(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n);
  float (*dot_q4_0)(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n);
  // The same dot products for kDotRows consecutive weight rows (row r starts
  // `row_stride` bytes after row r - 1) against one activation row, sharing
  // the activation loads and scale conversions between rows; used by matmul.
  // out[r] is bit-identical to the single-row dot of row r, so grouping rows
  // never changes a result (matmul's batch invariance depends on it).
  void (*dot_rows_f32)(const float* w, int64_t row_stride, const float* x, int64_t n, float* out);
  void (*dot_rows_f16)(const uint16_t* w, int64_t row_stride, const float* x, int64_t n, float* out);
  void (*dot_rows_bf16)(const uint16_t* w, int64_t row_stride, const float* x, int64_t n, float* out);
  void (*dot_rows_q8_0)(const BlockQ8_0* w, int64_t row_stride, const BlockQ8_0* x, int64_t n, float* out);
  void (*dot_rows_q4_0)(const BlockQ4_0* w, int64_t row_stride, const BlockQ8_0* x, int64_t n, float* out);
  // x[n] -> y[n/32]; bit-identical to quantize_row_q8_0_ref.
  void (*quantize_row_q8_0)(const float* x, BlockQ8_0* y, int64_t n);

  // y[n] += a * v[n] where v is f16 (attention's value accumulation).
  void (*axpy_f16)(float a, const uint16_t* v, float* y, int64_t n);
  // Attention's value accumulation for the query heads that share one KV
  // head (GQA, arXiv:2305.13245), P·V over one run of cached positions,
  // after the online softmax's rescale of the accumulator (`rescale`, [heads],
  // or null for none):
  //   out[g * out_stride + i] *= rescale[g]
  //   out[g * out_stride + i] += p[g * p_stride + j] * v_j[i]
  // for g < heads, then j = 0..n-1 in that order, i < hd, where v_j is the
  // f16 row at byte offset (j % v_rows) * v_stride from v[j / v_rows] (the
  // rows lie in blocks of v_rows, such as a tile's KV blocks; v has
  // ceil(n / v_rows) entries, none owned). Per head bit-identical to
  // scale(out + g * out_stride, rescale[g], hd), then
  // axpy_f16(p[g * p_stride + j], v_j, out + g * out_stride, hd) for
  // j = 0..n-1 (the same product and FMA per element in the same order), but
  // each value row is loaded and converted once for up to four heads, the
  // accumulators stay in registers across the blocks, and the rescale is
  // applied as the accumulators are loaded (a separate pass stored them just
  // before this call's loads, which then waited on the stores: 14% of this
  // kernel's samples at 4k context). Null in tables without a faster form:
  // callers then scale and loop over axpy_f16.
  void (*attn_pv_f16)(const float* p, int64_t p_stride, int heads, const uint16_t* const* v, int64_t v_rows,
                      int64_t v_stride, int n, float* out, int64_t out_stride, int64_t hd, const float* rescale);
  // Attention's key scores from keys stored transposed (KvBuffer's 16-bit K,
  // keys_in_lanes): kt[d * kt_stride + j] is key j's element d, j < n <=
  // kAttnKeys, d < hd (any hd); the queries transposed too, qt[d * heads +
  // g] = q_g[d] (element d of every head together, so that each broadcast
  // is a fixed offset from one pointer);
  //   s[g * s_stride + j] = q_g · k_j   (f32, unscaled)
  // for g < heads. Each score is one FMA chain over d = 0..hd-1 in order from
  // 0: q_g[d] broadcast against element d of all n keys (one vector), so no
  // reduction and no transposition is left (grouped-query attention, Ainslie
  // et al. 2023, arXiv:2305.13245: the heads of a group share every key),
  // and the same bits in every table that has it. Scores past n are not
  // written. Null in tables without it (callers then loop
  // over the elements).
  void (*attn_qk_f16_kt)(const float* qt, int heads, const uint16_t* kt, int64_t kt_stride, int n, int64_t hd, float* s,
                         int64_t s_stride);
  // attn_qk_f16_kt over bf16 keys (a bf16 KV cache).
  void (*attn_qk_bf16_kt)(const float* qt, int heads, const uint16_t* kt, int64_t kt_stride, int n, int64_t hd,
                          float* s, int64_t s_stride);
  // attn_qk_f16_kt over 8-bit keys (an int8 or FP8 KV cache, KvBuffer's
  // transposed K): kt[d * kt_stride + j] is key j's element d (int8, or FP8
  // E4M3 as core/fp8.h decodes it) and key_scale[j] its f32 scale;
  //   s[g * s_stride + j] = key_scale[j] * (q_g · e_j)
  // where e_j are the elements widened exactly (int8: the integer; FP8: the
  // f16 number value / 256, and key_scale[j] * 256 multiplies): the same FMA
  // chain as attn_qk_f16_kt, then one product; the same bits in every table.
  void (*attn_qk_i8_kt)(const float* qt, int heads, const uint8_t* kt, int64_t kt_stride, const float* key_scale, int n,
                        int64_t hd, float* s, int64_t s_stride);
  void (*attn_qk_fp8_kt)(const float* qt, int heads, const uint8_t* kt, int64_t kt_stride, const float* key_scale,
                         int n, int64_t hd, float* s, int64_t s_stride);
  // attn_pv_f16 over bf16 rows (a bf16 KV cache): the same shapes, order
  // and FMAs with each row element widened from bf16 (exact) instead of f16.
  // Null where attn_pv_f16 is: callers then use add_value per position.
  void (*attn_pv_bf16)(const float* p, int64_t p_stride, int heads, const uint16_t* const* v, int64_t v_rows,
                       int64_t v_stride, int n, float* out, int64_t out_stride, int64_t hd, const float* rescale);
  // attn_pv_f16 over int8 value rows read in place (an int8 KV cache,
  // kv_buffer.h: each row's hd bytes followed by its f32 scale, which the
  // caller folds into p): each element widened to f32 exactly, so the result
  // has the bits of attn_pv_f16 over the rows converted to f16 (int8 values
  // are f16 numbers) with p_j = weight_j * scale_j. Null where attn_pv_f16
  // is: callers then use add_value per position.
  void (*attn_pv_i8)(const float* p, int64_t p_stride, int heads, const uint8_t* const* v, int64_t v_rows,
                     int64_t v_stride, int n, float* out, int64_t out_stride, int64_t hd, const float* rescale);
  // FP8 E4M3 KV rows (each followed by its f32 scale, kv_buffer.h) to f16
  // rows that attn_pv_f16 reads: for j < n, with row j at byte offset
  // j * stride from `rows`,
  //   out[j * hd + i] = f16(value_ji / 256),  scales[j] = scale_j * 256
  // Exact: FP8 values / 256 are f16 numbers (core/fp8.h), so out * scales
  // == value * scale (NaN gives an f16 NaN). Converted once per block:
  // widening FP8 inside the P·V loop, once per pass of four heads, measured
  // no faster on AVX-512 (docs/quantization.md, round 17).
  //   out: [n, hd] f16;  scales: [n]
  void (*kv_fp8_to_f16)(const uint8_t* rows, int64_t stride, int n, int64_t hd, uint16_t* out, float* scales);
  // y[n] *= a.
  void (*scale)(float* y, float a, int64_t n);
  // f32 -> f16, round to nearest even (KV cache stores).
  void (*f32_to_f16_row)(const float* x, uint16_t* y, int64_t n);

  // y[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]  (RMSNorm, arXiv:1910.07467). y may alias x.
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t n, float eps);
  // y[n] = silu(gate[n]) * up[n]  (SwiGLU, arXiv:2002.05202). y may alias gate.
  void (*silu_mul)(const float* gate, const float* up, float* y, int64_t n);
  // In-place softmax over x[n] (max-subtracted).
  void (*softmax)(float* x, int64_t n);
  // One online-softmax step (FlashAttention, arXiv:2205.14135, Algorithm 1)
  // for `heads` rows of n >= 1 scores of one KV tile, row g at s + g * s_stride:
  //   m' = max(m[g], max_j s[g, j])
  //   c[g] = exp(m[g] - m')        (0 while m[g] = -inf; exactly 1 if m' = m[g])
  //   s[g, j] = exp(s[g, j] - m')  (a -inf score gives 0)
  //   l[g] = l[g] * c[g] + sum_j s[g, j];  m[g] = m'
  // m, l, c: [heads] running maximum, running sum, and the factor the caller
  // rescales its accumulator by before adding this tile's P·V. A row that has
  // seen only -inf scores keeps m = -inf and l = 0. The maxima are exact; SIMD
  // paths agree with the scalar one to a few ulp (exp to ~2 ulp, the sum's
  // order). Deterministic per row, so a token's attention does not depend on
  // the batch around it.
  void (*softmax_tile)(float* s, int64_t s_stride, int heads, int n, float* m, float* l, float* c);
  // Rotates x[n_heads, head_dim] in place for position `pos`: the first n_rot
  // dims of each head, pair i by angle pos * inv_freq[i] (inv_freq[n_rot/2]).
  void (*rope)(float* x, int n_heads, int head_dim, int n_rot, int32_t pos, const float* inv_freq, RopeStyle style);

  // Sum of x[n]: the read loop of the memory-bandwidth probe (bandwidth.h).
  float (*sum_f32)(const float* x, int64_t n);

  // Dot products of the remaining block formats (see QuantKernels).
  const QuantKernels* quant;
  // Register-tiled products that matmul uses instead of the dot products
  // above for F32/F16/BF16/Q8_0/Q4_0 weights; null on ISAs without them.
  const GemmKernels* gemm;
  // Not a kernel: how many row streams each thread walks at once for decode
  // (matmul.cc, decode_streams), 1..kMaxDecodeStreams. 1 keeps the previous
  // schedule (one stream per thread over a static share), for side-by-side
  // runs. Set from CpuBackendOptions; results do not depend on it.
  int decode_streams;
  // Not a kernel: whether matmul widens F16 / BF16 weight chunks to f32 once
  // per call and runs the F32 tile on them (gemm.h widen_f16, matmul.cc
  // widened_rows) instead of converting in the F16 / BF16 tile per token
  // group. Same bits either way. kernels_with sets it where the CPU splits
  // 256-bit operations (CpuFeatures::splits_256bit_ops): widening was 1.3-1.4x
  // faster on Zen 1 and 0.65x on Zen 4's AVX2 path (docs/quantization.md
  // rounds 10 and 14). False in the kernels_for tables.
  bool widen_half_rows;
};

inline constexpr int kDefaultDecodeStreams = 4;
inline constexpr int kMaxDecodeStreams = 4;

// The table for `isa`; isa must be in supported_isas().
const Kernels& kernels_for(Isa isa);
// kernels_for(best_isa()).
const Kernels& kernels();
// kernels_for(isa) as a CPU without AVX512-BF16 gets it (Cascade Lake, Ice
// Lake): for kAvx512 the table without the bf16 tile (gemm.h tile_bf16_dp;
// F16 then takes the int16 panels), for other ISAs kernels_for(isa). Lets
// tests and kernels_bench run that table on a CPU with AVX512-BF16.
const Kernels& kernels_without_avx512_bf16(Isa isa);
// The AVX-VNNI table (Isa::kAvxVnni: the AVX2 kernels, and the tile kernels of
// gemm_avx2.inc with TESSERA_AVX_VNNI) with its 256-bit vpdpbusd / vpdpwssd
// in their EVEX encoding (AVX512-VNNI + AVX512VL), the same operations on
// the same lanes (Intel SDM): the AVX-VNNI code as it runs on Alder Lake or
// Zen 5, on a CPU with AVX-512 VNNI and without AVX-VNNI (Zen 4, Ice Lake),
// so that tests and kernels_bench run it there. Never chosen by kernels_for
// or the engine. Requires cpu_features().avx512_vnni (aborts otherwise).
const Kernels& avx_vnni_kernels_as_evex();

// kernels_for(isa) with the schedule switches applied: without the tile
// kernels (gemm = nullptr) when !tile_kernels, and decode_streams streams.
Kernels kernels_with(Isa isa, bool tile_kernels, int decode_streams);

}  // namespace tessera::cpu
