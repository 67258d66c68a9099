// Weight layouts. Matrices come as GGUF stores them: row-major, each row a
// run of blocks, each block its f16 scale then its quants. The tile kernels
// (gemm.h: AVX-512 VNNI and AVX2) read Q4_0, Q8_0, Q4_K, Q4_1, Q5_0, Q5_1,
// Q5_K, Q3_K and Q2_K rows in an interleaved layout instead, made once when a Transformer
// is built (prepare_matrix):
//
//   x16: each row's blocks in groups of 16 (the last group of a row may hold
//   g < 16). A group of g blocks of B bytes keeps the g * B bytes it had:
//     - each field before a block's quants, field-major in GGUF order, each
//       in block order: g f16 scales d (2g bytes); Q4_1 / Q5_1: then g f16
//       minima m (2g bytes); Q5_0 / Q5_1: then g 32-bit fifth-bit words qh
//       (4g bytes, bit e of block b's word = bit 4 of its element e);
//     - the quants as 4-byte words, word-major: word k of blocks 0..g-1,
//       then word k + 1 of blocks 0..g-1, ... (Q4_0 / Q4_1 / Q5_x: 4 words
//       per block, byte j holding elements j and j + 16 as its low and high
//       nibble; Q8_0: 8 words, byte j element j).
//
//   Q4_K: groups of 4 super-blocks (g < 4 for the last group of a row),
//   lanes = the 4g chunks of 64 elements (chunk c of super-block s is lane
//   4s + c; its 32 quant bytes hold sub-block 2c in the low nibbles and
//   2c + 1 in the high ones). A group keeps its g * 144 bytes:
//     - the g f16 d, then the g f16 dmin (4g bytes);
//     - per lane 3 bytes, little-endian sc_2c | sc_2c+1 << 6 | m_2c << 12 |
//       m_2c+1 << 18 (the 6-bit scales and mins, re-packed; 12g bytes);
//     - the quants as 4-byte words, word-major as above (8 words per lane).
//
//   Q5_K: Q4_K's group with the fifth bits between the lane entries and the
//   quants (a group keeps its g * 176 bytes): after the 16g bytes of d,
//   dmin and entries, per lane L one 32-bit word of its even sub-block's
//   fifth bits (bit l = bit 4 of element 64c + l, i.e. bit 2c of the GGUF
//   qh[l]), lanes in order (16g bytes), then the odd sub-blocks' words
//   (bit l = bit 2c + 1 of qh[l], element 64c + 32 + l; 16g bytes); the
//   quant words follow at 48g. Bits 4k..4k+3 of a lane's word are then the
//   fifth bits of the nibbles in its quant word k.
//
//   Q3_K: Q4_K's groups and lanes (lane 4s + c: elements 64c..64c+63 of
//   super-block s, its 16-element sub-blocks 4c..4c+3). A group keeps its
//   g * 110 bytes:
//     - the g f16 d (2g bytes);
//     - per lane 3 bytes, little-endian s_4c | s_4c+1 << 6 | s_4c+2 << 12 |
//       s_4c+3 << 18 (the stored 6-bit scales, scale = s - 32; 12g bytes);
//     - at 14g, six 4-byte words per lane, word-major as above: words 0-3
//       the low two bits of the codes u (bits 2m..2m+1 of byte i of word p
//       those of chunk element 16p + 4m + i, so word p is sub-block 4c + p),
//       words 4 and 5 the third bits (bit m of byte i of word 4 + h that of
//       element 32h + 4m + i).
//   Quant word k (0..15) of a lane, elements 4k..4k+3, is then bits
//   2(k % 4).. of word k / 4 with bit k % 8 of word 4 + k / 8 on top.
//
//   Q2_K: the same groups, lanes and low-bit words (u is two bits). A group
//   keeps its g * 84 bytes: the g f16 d, the g f16 dmin (4g bytes), per
//   lane its 4 sub-blocks' GGUF scale bytes sc | m << 4 as they are (16g
//   bytes), then at 20g the four words per lane.
//
// One 64-byte load then holds word k of 16 blocks (the K-quants: of 16 chunks), so vpdpbusd leaves each
// block's integer dot product in a lane of its own and the block scales
// apply to 16 blocks with one convert and one FMA (four blocks per FMA with
// the GGUF layout, plus the shuffles to gather them): ~1.5x the kernel's
// compute ceiling, which is what decode needs once DRAM delivers more than
// ~45 GB/s (docs/quantization.md). The idea is the one behind llama.cpp's
// repacked "Q4_0_8x8" CPU layouts; this layout is our own. The AVX2 kernels
// read the same layout as two 32-byte halves (word k of blocks 0..7, then of
// blocks 8..15): each half is an 8-lane interleave of its own, so AVX2 needs
// no second layout.
//
// A row's size in bytes does not change, so row ranges of a repacked matrix
// are still rows (dtype_row_bytes).
//
//   bf16 panels (BF16 weights on AVX512-BF16, gemm.h tile_bf16_dp): rows in
//   panels of kBf16PanelRows = 16 consecutive rows; a panel holds its 16
//   rows' column pairs pair-major: element (row j, column c) of the panel
//   is at bf16 index (c / 2) * 32 + 2 * j + c % 2. One 64-byte load is then
//   column pair k of 16 rows, the operand vdpbf16ps multiplies with a
//   broadcast activation pair: each lane accumulates its own row, so the
//   tile needs no horizontal sums and reads one sequential stream per panel
//   (the layout of the B panels in Goto & van de Geijn, TOMS 2008, and of
//   oneDNN's "VNNI" bf16 weight formats; ours is this one). A matrix whose
//   rows are not a multiple of 16 ends in a panel of h < 16 rows, laid out
//   the same way with h in place of 16 (pair k of its rows at k * 2h). Only
//   for matrices with an even number of columns; a panel is its rows' bytes,
//   so ranges of whole panels are still row ranges.
//
//   int16 panels (F16 weights, and BF16 weights, on tables with tile_i16 and
//   without tile_bf16_dp, gemm.h, under BackendOptions::f16_matmul auto):
//   each row's values quantized per group
//   of 64 columns to int16 quants |q| <= 2047 and one f32 scale
//   (gemm_i16_ref.h quantize_i16_group); the quants in panels of R
//   consecutive rows (the table's i16_panel_rows: 8 on AVX2, 16 on
//   AVX-512), column pairs pair-major: quant (row j, column c) of a panel
//   is at int16 index (c / 2) * 2R + 2 * j + c % 2. One vector load (32 or
//   64 bytes) is then column pair k of R rows, the operand vpmaddwd /
//   vpdpwssd multiplies with a broadcast activation pair (the bf16 panels'
//   scheme). The scales lie apart, f32 [rows / R][cols / 64][R]: group g of
//   a panel's rows is one vector load. A panel is its rows' bytes (2 per
//   element, as F16), so ranges of whole panels are still row ranges; only
//   for rows % R == 0 and cols % 64 == 0.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/huge_page_memory.h"
#include "core/dtype.h"

namespace tessera {
class ThreadPool;
}

namespace tessera::cpu {

struct GemmKernels;
struct Kernels;
struct MatrixView;

enum class WeightLayout : uint8_t {
  kGguf,       // as stored in GGUF files
  kX16,        // the interleaved groups above (has_x16_layout types only)
  kBf16Panel,  // the bf16 panels above (BF16 only)
  kI16Panel,   // the int16 panels above (from F16 or BF16; MatrixView::i16_scales)
};

// Rows per bf16 panel.
inline constexpr int kBf16PanelRows = 16;

// Whether a BF16 matrix of rows × cols can take the bf16 panel layout.
inline bool fits_bf16_panels(int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && cols % 2 == 0;
}

// Rewrites `rows` BF16 rows of `cols` elements from the GGUF layout (row-major)
// to bf16 panels (repack) or back (unpack). src and dst hold rows * cols
// bf16 each and must not overlap. Requires fits_bf16_panels(rows, cols).
void repack_rows_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols);
void unpack_rows_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols);
// The same repack from F16 rows: each value rounded to bf16 on the way
// (through its exact f32 value, round to nearest even; Inf and NaN stay
// Inf and NaN, every finite f16 is a finite bf16 since bf16 has f32's
// exponent range). src holds rows * cols f16, dst rows * cols bf16.
void repack_rows_f16_as_bf16_panel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t cols);

// Whether an F16 or BF16 matrix of rows × cols can take int16 panels of
// panel_rows rows.
inline bool fits_i16_panels(int64_t rows, int64_t cols, int panel_rows) {
  return rows > 0 && cols > 0 && panel_rows > 0 && rows % panel_rows == 0 && cols % 64 == 0;
}

// Quantizes `rows` rows of `cols` elements of type t (F16 or BF16; GGUF
// layout, row-major; whole panels) into int16 panels of panel_rows rows:
// dst[rows * cols] quants, scales[rows * cols / 64] f32
// ([rows / R][cols / 64][R]), each group by quantize_i16_group(·, ·,
// kI16WeightMax) of its exact f32 values. With g, through g's quantize_i16
// (and widen_f16 / widen_bf16 where the table has them): what
// prepare_matrix runs, ~5x faster than the scalar form that g null gives;
// the bits are the same. Requires t F16 or BF16 and fits_i16_panels(rows,
// cols, panel_rows).
void repack_rows_as_i16_panel(DType t, const uint16_t* src, int16_t* dst, float* scales, int64_t rows, int64_t cols,
                              int panel_rows, const GemmKernels* g = nullptr);

// Blocks per interleaved group (Q4_0, Q8_0, ...) and super-blocks per group (Q4_K, Q5_K, Q3_K, Q2_K).
inline constexpr int kX16Blocks = 16;
inline constexpr int kX16SuperBlocks = 4;
// Bytes per super-block of a Q4_K / Q5_K x16 group before its quant words
// (d, dmin, the lane entries; Q5_K: its lanes' fifth-bit words), which
// are also the bytes before qs in a GGUF block: a group of g super-blocks
// has its quant words at x16_k_head_bytes(five) * g.
inline constexpr int x16_k_head_bytes(bool five) {
  return five ? 48 : 16;
}

// Bytes per super-block of a Q2_K (two) / Q3_K x16 group before its quant
// words (d, Q2_K's dmin, the lane entries): a group of g super-blocks has
// quant word j of lane L at x16_k23_head_bytes(two) * g + 4 * (4g * j + L).
inline constexpr int x16_k23_head_bytes(bool two) {
  return two ? 20 : 14;
}

// Whether dtype t has an x16 layout (Q4_0, Q8_0, Q4_K, Q4_1, Q5_0, Q5_1, Q5_K, Q3_K, Q2_K).
bool has_x16_layout(DType t);

// Rewrites `rows` rows of `cols` elements (a multiple of the block) from the GGUF
// layout to x16 (repack) or back (unpack). src and dst hold
// rows * dtype_row_bytes(t, cols) bytes each and must not overlap.
// Requires has_x16_layout(t).
void repack_rows_x16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols);
void unpack_rows_x16(DType t, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols);

// Bytes of one prepared weight copy: huge-page memory (huge_page_memory.h),
// whose writers (the repack, the copy) fault its pages in, in parallel.
using WeightCopy = HugePageMemory;

// The copies a prepared matrix owns (growing it never moves their bytes).
using WeightStorage = std::vector<WeightCopy>;

// The view `k`'s matmul reads fastest, appended to `storage` when it is a
// copy (`storage` owns it; growing `storage` never moves the bytes of
// earlier copies); otherwise w itself:
// - when k has a tile kernel for w's type (has_tile(*k.gemm, w.dtype)) and
//   w is a matrix of an x16 type (has_x16_layout) in the GGUF layout, a copy in the x16
//   layout, rows repacked in parallel on `pool`;
// - a BF16 matrix whose products take bf16 activations (k has
//   tile_bf16_dp, w is not f32_activations) and that fits_bf16_panels: a
//   copy in the bf16 panel layout; with half_inexact, an F16 matrix on the
//   same terms too, its values rounded to bf16 (repack_rows_f16_as_bf16_panel;
//   the returned view is then BF16: BackendOptions::f16_matmul); with
//   half_inexact on a table without tile_bf16_dp but with tile_i16 (AVX2;
//   AVX-512 without AVX512-BF16), an F16 or BF16 matrix that
//   fits_i16_panels in the table's panel height and is not f32_activations:
//   a copy in the int16 panel layout and a second copy with its scales (the
//   view keeps its dtype, layout kI16Panel, i16_scales set; its panels are
//   the table's i16_panel_rows high);
// - an F16 / BF16 / F32 matrix that lies in a mapped model file, a plain
//   copy in anonymous memory: the file's page-cache pages are 4 KiB, and
//   decode streaming an F16 1.1B model from them ran at 0.6-0.8x the speed
//   of the same bytes in transparent huge pages (TLB misses; quantized
//   types got huge pages through their x16 copy already).
// Copies are WeightCopy mappings (huge pages advised, for systems whose
// transparent huge pages are in "madvise" mode) and the mapped file's pages
// are released.
MatrixView prepare_matrix(const Kernels& k, const MatrixView& w, ThreadPool& pool, WeightStorage& storage,
                          bool half_inexact = false);

}  // namespace tessera::cpu
