// Register-tiled weight × activation products (the micro-kernels of matmul),
// one set per SIMD path: AVX-512 with VNNI (gemm_avx512.cc) and AVX2 + FMA +
// F16C (gemm_avx2.cc).
//
// A tile kernel computes y[t, r] = W[r, :] · X[t, :] for up to `max_rows`
// consecutive weight rows and `max_tokens` activation rows at once, so that
// each weight vector loaded feeds several tokens and each activation vector
// several rows (the register blocking of Goto & van de Geijn, "Anatomy of
// High-Performance Matrix Multiplication", TOMS 2008).
//
// Batch invariance: every output element has its own accumulator and goes
// through exactly the same instruction sequence over the reduction dimension
// (same order, same roundings) whatever the tile's row and token counts are.
// A tile of 1 × 1 therefore gives the same bits as the same element inside a
// 4 × 6 tile, and matmul's result for a token does not depend on which other
// tokens share the call (the engine relies on this; see matmul.h).
//
// Quantized weights (Q8_0, Q4_0, Q4_K; Q4_1, Q5_0, Q5_1, Q5_K, Q3_K, Q2_K) come in the x16 layout
// (weight_layout.h) and take activations in a packed format made from f32
// by pack_q8x16 (Q8_0 blocks quantized exactly as
// Kernels::quantize_row_q8_0, each group of sixteen blocks laid out like the
// weights' group: PackedQ8x16Group) or pack_q8k (Q8_K blocks as
// Kernels::quantize_row_q8_k, four per PackedQ8KGroup; for Q4_K / Q5_K / Q3_K / Q2_K). Q6_K weights stay in
// the GGUF layout and take plain Q8_K rows (QuantKernels::quantize_row_q8_k).
// Float weights take f32 activations directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace tessera::cpu {

// Sixteen Q8_0 activation blocks (512 elements) laid out like a group of
// x16 weights: q[k][4b + i] is quant 4k + i of block b, so int32 lane b of
// vpdpbusd over word k of the weights collects block b.
struct alignas(64) PackedQ8x16Group {
  int8_t q[8][64];
  float d[16];  // block b's scale (f16 widened to f32)
  // -offset * (sum of block b's 32 quants), where offset is what the weight
  // format adds to make its quants unsigned (kQ8Offset, kQ4Offset): the seed
  // of block b's integer accumulator.
  int32_t offset_sum[16];
};
static_assert(sizeof(PackedQ8x16Group) == 640);

// Four Q8_K activation blocks (1024 elements) laid out like a group of x16
// Q4_K / Q5_K / Q3_K / Q2_K weights: lane L = 4s + c is chunk c (64 elements) of
// block s; lo[k][4L + i] is quant 64c + 4k + i of block s (Q4_K's sub-block
// 2c), hi[k][4L + i] quant 64c + 32 + 4k + i (sub-block 2c + 1). Quant word k
// < 16 of a chunk (its elements 4k..4k+3, as the Q2_K / Q3_K tiles count them)
// is then lo[k] for k < 8 and hi[k - 8] above.
struct alignas(64) PackedQ8KGroup {
  int8_t lo[8][64];
  int8_t hi[8][64];
  float d[16];       // lane L: block s's scale
  float sum_lo[16];  // lane L: sum of sub-block 2c's 32 quants (exact)
  float sum_hi[16];  // lane L: sum of sub-block 2c + 1's quants
  // The sums of 16 quants (Q8_K's bsums) in vpmaddwd pairs: int32 lane L of
  // bsums[h] holds those of elements 64c + 32h .. + 15 (low word) and
  // 64c + 32h + 16 .. + 31 (high word), i.e. of the chunk's 16-element
  // sub-blocks 2h and 2h + 1 (Q3_K's offset term, Q2_K's minima).
  int16_t bsums[2][32];
};
static_assert(sizeof(PackedQ8KGroup) == 1344);

// Bytes of one packed Q8_K row of n elements (n % 256 == 0), the last group
// zero-padded.
inline size_t packed_q8k_row_bytes(int64_t n) {
  const int64_t blocks = n / kSuperBlockElems;
  return static_cast<size_t>((blocks + 3) / 4) * sizeof(PackedQ8KGroup);
}

// Offsets of the unsigned weight quants: Q8_0 as w + 128, Q4_0 nibbles as w + 8,
// Q5_0's 5-bit quants as w + 16.
inline constexpr int32_t kQ8Offset = 128;
inline constexpr int32_t kQ4Offset = 8;
inline constexpr int32_t kQ5Offset = 16;
// The packing offset for the formats with a minimum (Q4_1, Q5_1: w = d * u +
// m, u unsigned as stored): offset_sum then holds +sum(x) for the min term
// (m * d_x * sum(x)) instead of a seed.
inline constexpr int32_t kSumOffset = -1;

// The pack_q8x16 offset for activations against x16 weights of type t
// (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1).
inline int32_t x16_act_offset(DType t) {
  switch (t) {
    case DType::kQ8_0:
      return kQ8Offset;
    case DType::kQ5_0:
      return kQ5Offset;
    case DType::kQ4_1:
    case DType::kQ5_1:
      return kSumOffset;
    default:
      return kQ4Offset;
  }
}

// Bytes of one packed activation row of n elements (n % 32 == 0): groups of
// sixteen blocks, the last group zero-padded (zero quants, scales and seeds).
inline size_t packed_q8x16_row_bytes(int64_t n) {
  const int64_t blocks = n / kQuantBlockElems;
  return static_cast<size_t>((blocks + 15) / 16) * sizeof(PackedQ8x16Group);
}

// Elements of one packed bf16 activation row of n elements (pack_bf16): n
// rounded up to a whole 64-byte vector of 32 bf16, the tail zero.
inline int64_t packed_bf16_row_elems(int64_t n) {
  return (n + 31) / 32 * 32;
}

struct GemmKernels {
  // Most weight rows / activation rows per tile call of the quantized and
  // the float kernels (rows ≥ 1, tokens ≥ 1 up to these; any smaller count
  // is allowed and gives bit-identical elements).
  int quant_rows, quant_tokens;
  int float_rows, float_tokens;
  // The prefill tile (more than one token) of each quantized type, at most
  // quant_rows × quant_tokens: the shape whose integer sums, unpacked
  // weights and activations fit the registers (Q4_K keeps two sums per
  // element). Decode takes tiles of up to quant_rows rows of one token
  // (Q5_K / Q6_K / Q3_K: their decode rows). quant_tile_shape picks from these.
  int q4_k_rows, q4_k_tokens;
  int q5_k_rows, q5_k_tokens;
  int q8_0_rows, q8_0_tokens;
  int q4_0_rows, q4_0_tokens;
  int q6_k_rows, q6_k_tokens;
  int q2_k_rows, q2_k_tokens;
  int q3_k_rows, q3_k_tokens;
  // Rows of the one-token (decode) tile of Q5_K, Q6_K and Q3_K, <=
  // quant_rows (the other types take quant_rows): where unpacking a row
  // takes most of the registers, four rows at once spill (AVX2).
  int q5_k_decode_rows, q6_k_decode_rows, q3_k_decode_rows;

  // x[n] f32 -> out[packed_q8x16_row_bytes(n)], 64-byte aligned; n % 32 == 0;
  // offset: x16_act_offset of the weights' type (kQ8Offset for Q8_0,
  // kQ4Offset for Q4_0, ...).
  void (*pack_q8x16)(const float* x, PackedQ8x16Group* out, int64_t n, int32_t offset);
  // x[n] f32 -> out[packed_q8k_row_bytes(n)], 64-byte aligned; n % 256 == 0;
  // quantized exactly as Kernels::quantize_row_q8_k does (for Q4_K weights).
  void (*pack_q8k)(const float* x, PackedQ8KGroup* out, int64_t n);

  // Tile kernels. w: first weight row (x16 layout for the 32-element formats); w_stride:
  // bytes between weight rows; x: first activation row (packed groups for quantized weights, f32 for
  // float weights); x_stride: bytes between activation rows; n: elements per
  // row (a multiple of 32 for quantized weights); y[t * y_stride + r] (floats)
  // receives the result for r < rows, t < tokens; rows <= the set's
  // quant_rows / float_rows and tokens <= quant_tokens / float_tokens. Decode
  // passes rows far apart (w_stride of many rows; matmul.cc decode_streams).
  void (*tile_q8_0)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8x16Group* x, int64_t x_stride,
                    int tokens, int64_t n, float* y, int64_t y_stride);
  void (*tile_q4_0)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8x16Group* x, int64_t x_stride,
                    int tokens, int64_t n, float* y, int64_t y_stride);
  void (*tile_q4_k)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8KGroup* x, int64_t x_stride, int tokens,
                    int64_t n, float* y, int64_t y_stride);
  // Q5_K (x16 layout, weight_layout.h; pack_q8k activations): Q4_K's
  // arithmetic with u = nibble | fifth bit << 4 (<= 31), per lane the two
  // sub-blocks' exact integer sums, then d·sc·Σu·x − dmin·m·Σx per
  // sub-block and one FMA with d_x; its own prefill shape (q5_k_rows,
  // q5_k_tokens). Null in a set without it: Q5_K then takes the dot
  // products and keeps the GGUF layout.
  void (*tile_q5_k)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8KGroup* x, int64_t x_stride, int tokens,
                    int64_t n, float* y, int64_t y_stride);
  // Q6_K: w in the GGUF layout, x rows of BlockQ8_K (n % 256 == 0); each
  // element bit-identical to the same ISA's QuantKernels::dot_q6_k.
  void (*tile_q6_k)(const uint8_t* w, int64_t w_stride, int rows, const BlockQ8_K* x, int64_t x_stride, int tokens,
                    int64_t n, float* y, int64_t y_stride);
  // Q2_K and Q3_K (x16 layout, weight_layout.h; pack_q8k activations): per
  // lane and 16-element sub-block p the exact integer sum of u * x (u the
  // 2-bit code, or Q3_K's 3-bit code q + 4), times the sub-block's scale
  // (Q2_K: sc; Q3_K: s - 32) by vpmaddwd / vpdpwssd into one s32 lane sum
  // per chunk. Q3_K subtracts the offset 4 * (s - 32) * (sum of x) from it
  // (bsums) and takes one convert and one FMA with d_w * d_x per group;
  // Q2_K takes d * sum - dmin * (sum of m * bsums), then one FMA with d_x.
  // Their own shapes (q2_k_rows / q3_k_rows ...). Null in a set without
  // them: Q2_K / Q3_K then take the dot products and keep the GGUF layout.
  void (*tile_q2_k)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8KGroup* x, int64_t x_stride, int tokens,
                    int64_t n, float* y, int64_t y_stride);
  void (*tile_q3_k)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8KGroup* x, int64_t x_stride, int tokens,
                    int64_t n, float* y, int64_t y_stride);
  // Q4_1, Q5_0 and Q5_1 (x16 layout, activations packed with
  // x16_act_offset): each block's exact integer sum of u * x (Q5_0 seeded
  // with -16 * sum(x)), then per block d_w * d_x times it (and, with a
  // minimum, m_w * d_x * sum(x)). Tile shapes as Q4_0's (q4_0_rows,
  // q4_0_tokens). A set may leave them null: those types then take the dot
  // products and keep the GGUF layout.
  void (*tile_q4_1)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8x16Group* x, int64_t x_stride,
                    int tokens, int64_t n, float* y, int64_t y_stride);
  void (*tile_q5_0)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8x16Group* x, int64_t x_stride,
                    int tokens, int64_t n, float* y, int64_t y_stride);
  void (*tile_q5_1)(const uint8_t* w, int64_t w_stride, int rows, const PackedQ8x16Group* x, int64_t x_stride,
                    int tokens, int64_t n, float* y, int64_t y_stride);
  void (*tile_f32)(const float* w, int64_t w_stride, int rows, const float* x, int64_t x_stride, int tokens, int64_t n,
                   float* y, int64_t y_stride);
  void (*tile_f16)(const uint16_t* w, int64_t w_stride, int rows, const float* x, int64_t x_stride, int tokens,
                   int64_t n, float* y, int64_t y_stride);
  void (*tile_bf16)(const uint16_t* w, int64_t w_stride, int rows, const float* x, int64_t x_stride, int tokens,
                    int64_t n, float* y, int64_t y_stride);

  // BF16 weights in the bf16 panel layout (weight_layout.h) against
  // activations rounded to bf16 (AVX512-BF16, where CPUID reports it; null
  // elsewhere: prepare_matrix then keeps BF16 rows in the GGUF layout and
  // matmul takes tile_bf16). pack_bf16 rounds x[n] to nearest even into
  // out[packed_bf16_row_elems(n)] (64-byte aligned) with subnormals flushed
  // to zero (vcvtne2ps2bf16; llama.cpp's BF16 path rounds the activations
  // the same way). tile_bf16_dp computes `panels` (1..bf16_panels) panels of
  // 16 rows, panel_stride bytes apart (16 * n * 2 for adjacent panels), for
  // `tokens` (1..bf16_tokens) packed rows x_stride bytes apart, with
  // vdpbf16ps (two products per lane and instruction); n even. Row j of
  // panel p, token t lands in y[t * y_stride + p * y_panel_stride + j]
  // (floats). tile_bf16_dp_part computes a matrix's last panel when it
  // holds rows < 16 rows (1..15), row j of token t into y[t * y_stride + j].
  // Each element equals dot_bf16_dp_ref (gemm_bf16_ref.h) of the row in the
  // GGUF layout, bit for bit, in every tile shape.
  void (*pack_bf16)(const float* x, uint16_t* out, int64_t n);
  void (*tile_bf16_dp)(const uint16_t* w, int64_t panel_stride, int panels, const uint16_t* x, int64_t x_stride,
                       int tokens, int64_t n, float* y, int64_t y_stride, int64_t y_panel_stride);
  void (*tile_bf16_dp_part)(const uint16_t* w, int rows, const uint16_t* x, int64_t x_stride, int tokens, int64_t n,
                            float* y, int64_t y_stride);
  int bf16_panels, bf16_tokens;

  // F16 weights as int16 panels (weight_layout.h; the AVX2 and AVX-512
  // tables, with 8- and 16-row panels) against activations quantized to int16 (gemm_i16_ref.h: the
  // format, the bounds that keep the integer sums exact, and the scalar
  // reference every element equals bit for bit, in every tile shape).
  // quantize_i16 writes x[n] as quants q[n] and group scales d[n / 64],
  // each group as quantize_i16_group(·, ·, qmax) does, bit for bit; n % 64
  // == 0. Activations take qmax = kI16ActMax into a packed row (q, then d:
  // pack_i16_ref), weights kI16WeightMax at load (the repack with a table,
  // weight_layout.h). tile_i16 computes `panels`
  // panels of i16_panel_rows (R) rows, the first at w (int16 quants), each
  // next panel_stride bytes on, their scales at w_scales + p * scale_stride
  // (floats; a panel's scales are [n / 64][R]), for `tokens` packed rows
  // x_stride bytes apart; row j of panel p, token t lands in
  // y[t * y_stride + p * y_panel_stride + j].
  // panels <= i16_panels and tokens <= i16_tokens (the prefill tile), or
  // panels <= i16_stream_panels with one token (decode streams).
  void (*quantize_i16)(const float* x, int16_t* q, float* d, int64_t n, int32_t qmax);
  void (*tile_i16)(const int16_t* w, int64_t panel_stride, const float* w_scales, int64_t scale_stride, int panels,
                   const uint8_t* x, int64_t x_stride, int tokens, int64_t n, float* y, int64_t y_stride,
                   int64_t y_panel_stride);
  int i16_panel_rows, i16_panels, i16_tokens, i16_stream_panels;

  // Prefill with F16 / BF16 weights through tile_f32 (null where the set
  // does not take this path): widen_f16 / widen_bf16 write w[n] as
  // out[n] f32 (exact conversions). When they are set, matmul widens each
  // L2 chunk of weight rows once into a per-thread buffer and runs tile_f32
  // over it for every token group, instead of tile_f16 / tile_bf16
  // converting the chunk again for each group of float_tokens tokens. A set
  // fills them only where tile_f32 is tile_f16's / tile_bf16's instruction
  // sequence after the conversion (AVX2's tile_float), so either path gives
  // the same bits and the choice keeps matmul batch-invariant.
  void (*widen_f16)(const uint16_t* w, float* out, int64_t n);
  void (*widen_bf16)(const uint16_t* w, float* out, int64_t n);
};

// g's x16 tile kernel for a 32-element format (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1); null for other types or where g has none.
inline decltype(GemmKernels::tile_q4_0) x16_tile(const GemmKernels& g, DType t) {
  switch (t) {
    case DType::kQ8_0:
      return g.tile_q8_0;
    case DType::kQ4_0:
      return g.tile_q4_0;
    case DType::kQ4_1:
      return g.tile_q4_1;
    case DType::kQ5_0:
      return g.tile_q5_0;
    case DType::kQ5_1:
      return g.tile_q5_1;
    default:
      return nullptr;
  }
}
// g's tile for the x16 super-block formats (Q4_K, Q5_K, Q3_K, Q2_K: packed Q8_K
// activations, pack_q8k); null for other types or where g has none.
inline decltype(GemmKernels::tile_q4_k) k_x16_tile(const GemmKernels& g, DType t) {
  switch (t) {
    case DType::kQ4_K:
      return g.tile_q4_k;
    case DType::kQ5_K:
      return g.tile_q5_k;
    case DType::kQ3_K:
      return g.tile_q3_k;
    case DType::kQ2_K:
      return g.tile_q2_k;
    default:
      return nullptr;
  }
}
// g's tile for the super-block format that stays in the GGUF layout and
// reads plain Q8_K rows (Q6_K); null for other types or where g has none.
inline decltype(GemmKernels::tile_q6_k) q8k_tile(const GemmKernels& g, DType t) {
  switch (t) {
    case DType::kQ6_K:
      return g.tile_q6_k;
    default:
      return nullptr;
  }
}

// Whether g has a tile kernel for weights of type t. A set may leave an
// entry null: matmul then computes that type with the dot products, and
// prepare_matrix keeps its GGUF layout.
inline bool has_tile(const GemmKernels& g, DType t) {
  switch (t) {
    case DType::kF32:
      return g.tile_f32 != nullptr;
    case DType::kF16:
      return g.tile_f16 != nullptr;
    case DType::kBF16:
      return g.tile_bf16 != nullptr;
    default:
      return x16_tile(g, t) != nullptr || k_x16_tile(g, t) != nullptr || q8k_tile(g, t) != nullptr;
  }
}

// Whether the tiles for weights of type t read plain Q8_K rows (the GGUF
// layout's super-block formats, as their dot products do) rather than
// packed activations.
inline bool reads_q8k_rows(DType t) {
  return t == DType::kQ6_K;
}

// The tile shape matmul calls a quantized type's kernel with: the type's
// prefill tile, whose rows become quant_rows (Q5_K / Q6_K / Q3_K: their decode
// rows) for one token.
struct TileShape {
  int rows, tokens;
};
inline TileShape quant_tile_shape(const GemmKernels& g, DType t, int64_t n_tokens) {
  auto shape = [&](int rows, int tokens, int decode_rows) {
    return TileShape{n_tokens == 1 ? decode_rows : rows, tokens};
  };
  switch (t) {
    case DType::kQ8_0:
      return shape(g.q8_0_rows, g.q8_0_tokens, g.quant_rows);
    case DType::kQ4_K:
      return shape(g.q4_k_rows, g.q4_k_tokens, g.quant_rows);
    case DType::kQ5_K:
      return shape(g.q5_k_rows, g.q5_k_tokens, g.q5_k_decode_rows);
    case DType::kQ6_K:
      return shape(g.q6_k_rows, g.q6_k_tokens, g.q6_k_decode_rows);
    case DType::kQ2_K:
      return shape(g.q2_k_rows, g.q2_k_tokens, g.quant_rows);
    case DType::kQ3_K:
      return shape(g.q3_k_rows, g.q3_k_tokens, g.q3_k_decode_rows);
    default:  // Q4_0, and Q4_1 / Q5_0 / Q5_1 with Q4_0's shapes
      return shape(g.q4_0_rows, g.q4_0_tokens, g.quant_rows);
  }
}

}  // namespace tessera::cpu
