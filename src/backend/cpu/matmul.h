// Matrix-vector / matrix-matrix products of a weight matrix with f32
// activations, the bulk of a forward pass.
//
// Batch invariance: every output y[t, r] is computed by one fixed
// instruction sequence over W row r and activation row t, whatever else is
// in the batch. Where the kernel table has tile kernels (k.gemm: AVX-512, AVX2),
// that is the tile kernel's per-element sequence (gemm.h: an element gives
// the same bits in a 1 x 1 tile as in a full one); elsewhere it is one call
// of the table's dot product, with row groups (dot_rows_*) bit-identical to
// it. Quantized activations are quantized per row by the same routine either
// way. How rows are split over threads and how tokens and rows are tiled
// only changes the order in which these independent computations run, so
// y[t, :] is bit-identical whether token t is computed alone or inside a
// batch of any size, and for any thread count. The engine relies on this to
// give the same tokens for prefill-then-decode as for token-by-token decode.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/weight_layout.h"
#include "core/dtype.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

// A weight matrix W[rows, cols] stored row-major (cols contiguous), each row
// dtype_row_bytes(dtype, cols) bytes; not owned. Rows are in the GGUF block
// layout, or in the x16 or bf16 panel layouts (weight_layout.h) that only a
// kernel table with tile kernels (k.gemm) reads.
struct MatrixView {
  DType dtype;
  const void* data;
  int64_t rows;
  int64_t cols;
  WeightLayout layout = WeightLayout::kGguf;
  // BF16 weights: keep f32 activations even where the kernel table has the
  // bf16-activation tile (gemm.h tile_bf16_dp), so prepare_matrix leaves
  // the rows in the GGUF layout; set for the output head (MatrixUse::kLogits).
  bool f32_activations = false;
  // kI16Panel: the group scales, f32 [rows / R][cols / 64][R] (weight_layout.h;
  // R: the preparing table's i16_panel_rows); not owned (prepare_matrix's
  // storage holds them).
  const float* i16_scales = nullptr;
};

// y[n_tokens, rows] = x[n_tokens, cols] · Wᵀ, f32 in/out. Multi-threaded over
// pool by contiguous chunks of output rows, so decode reads each weight row
// once per call. For quantized weights (cols a multiple of the block size)
// the activations are quantized once per row of x to the weight's
// dtype_vec_dot_type (Q8_0 for 32-element formats, Q8_K for K-quants; for
// x16 weights Q8_0 packed sixteen blocks at a time, PackedQ8x16Group) into
// `scratch` (grown as needed, never shrunk, so a caller can reuse one buffer
// across calls). BF16 weights in the bf16 panel layout (prepare_matrix makes
// it on tables with tile_bf16_dp, AVX512-BF16) take x rounded to bf16 the
// same way (pack_bf16); BF16 rows in the GGUF layout take f32 x. F16
// weights in the int16 panel layout (prepare_matrix makes it on tables with
// tile_i16 and without tile_bf16_dp: AVX2, AVX-512 without AVX512-BF16) take
// x quantized per 64-element group to int16 (quantize_i16).
// A matrix in int16 panels gives the same bits as dot_i16_ref (gemm_i16_ref.h)
// per element, whatever the batch.
// Q8_K is an activation format and not accepted as weights;
// x16 weights and bf16 panels need k.gemm (a programming error otherwise, checked).
void matmul(ThreadPool& pool, const Kernels& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch);

// The conversion matmul applies to F16 / BF16 rows in the GGUF layout before
// the f32 tile (gemm.h widen_f16 / widen_bf16, Kernels::widen_half_rows) for
// a call of n_tokens tokens of type t, or null where it runs the F16 / BF16
// tile directly: other types, tables without it, and calls of fewer than two
// float token groups (the chunk's conversion would not be shared).
using HalfRowWidener = void (*)(const uint16_t* src, float* dst, int64_t n);
HalfRowWidener half_row_widener(const Kernels& k, DType t, int64_t n_tokens);

// One weight matrix and its output y[n_tokens, w.rows] (caller-owned).
struct MatmulTarget {
  MatrixView w;
  float* y;
};

// The products of several matrices with the same activations (Q, K and V;
// gate and up): targets[i].y = x · targets[i].wᵀ. When the matrices share
// dtype, layout, cols and f32_activations, x is quantized once and one parallel region covers the
// rows of all of them as if stacked, so small matrices do not each pay a
// thread wake-up; otherwise it is one matmul per target. Every y is
// bit-identical to what matmul gives for that matrix alone.
void matmul_multi(ThreadPool& pool, const Kernels& k, std::span<const MatmulTarget> targets, const float* x,
                  int64_t n_tokens, std::vector<uint8_t>& scratch);

}  // namespace tessera::cpu
