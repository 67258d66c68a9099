#include "backend/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <type_traits>

#include "backend/cpu/gemm_i16_ref.h"
#include "core/check.h"

namespace tessera::cpu {

namespace {

// Argument types of a dot-product function pointer (for the null dot_rows
// of formats that only have a single-row kernel).
template <typename F>
struct DotArgs;
template <typename W, typename X>
struct DotArgs<float (*)(const W*, const X*, int64_t)> {
  using First = const W*;
  using Second = const X*;
};
template <typename F>
using first_arg_t = typename DotArgs<F>::First;
template <typename F>
using second_arg_t = typename DotArgs<F>::Second;

// p advanced by `bytes` (activation rows are byte strides apart).
template <typename T>
const T* advance_bytes(const T* p, int64_t bytes) {
  return reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(p) + bytes);
}

// Weight rows per prefill tile: small enough that the tile stays in L2
// (1 MiB per core on Zen 4, 256 KiB on older parts) while every token's
// activation row streams past it.
constexpr size_t kTileBytes = 192 * 1024;
// Chunk boundaries between threads are multiples of this many rows, so two
// threads never write the same cache line of y for decode.
constexpr int64_t kRowGranule = 16;
static_assert(kRowGranule % kBf16PanelRows == 0, "thread chunks of bf16 panels start on panel boundaries");
static_assert(kRowGranule % 16 == 0, "thread chunks of int16 panels (8 or 16 rows) start on panel boundaries");

// Decode (one token) streams every weight row once from DRAM. A chunk of
// rows [r_begin, r_end) is cut into up to k.decode_streams equal
// sub-ranges walked together, one tile of rows spaced a sub-range apart per
// step: several independent sequential streams keep more memory requests in
// flight than one (as the bandwidth probe's streams do). On Zen 4 four
// streams read a 5632 x 2048 Q4_0 matrix at ~50 GB/s where one stream per
// thread read ~41 (bandwidth probe ~55), while a tile of adjacent rows ran at
// less than half speed. Tiles of any shape give the same bits, so this is
// purely a speed choice.
constexpr int64_t kMaxStreams = 4;
constexpr int64_t kMinStreamRows = 16;  // shorter sub-ranges are not worth a stream

// A step of a few tokens (speculative verification, small decode batches)
// takes the same streams when its tokens fit one tile (tiled_rows): its
// weight rows are read from DRAM once either way, and as far-apart streams
// they arrive faster (kernels_bench BM_FewRows, 2048 x 8192, 2 threads, 2
// tokens: Q4_0 0.21-0.22 ms against 0.33-0.40 for the L2-chunked tiles of
// adjacent rows, Q8_0 0.40-0.45 / 0.60-0.65, F16 0.62-0.66 / 0.90-1.02).
constexpr int64_t kMaxStreamTokens = 8;  // bounds the per-step output buffer

// y[t, r] for r in [r_begin, r_end) and n_tokens <= kMaxStreamTokens tokens,
// x[t] x_row_bytes apart. More tokens than one tile call takes (max_tokens)
// go through it in groups on the same weight rows, which the first group has
// just brought into L1, so a 5-token step (a verification of 4 proposals)
// reads the weights once, as streams (kernels_bench BM_FewRows Q4_0, 5 rows:
// 0.77x the time of the L2-chunked tiles of adjacent rows).
template <typename WT, typename XT, typename TileFn>
void decode_streams(TileFn tile, int max_rows, int max_tokens, const uint8_t* w, size_t w_row_bytes, const XT* x,
                    size_t x_row_bytes, int64_t cols, int64_t rows, int n_tokens, float* y, int64_t r_begin,
                    int64_t r_end, int n_streams) {
  auto row = [&](int64_t r) { return reinterpret_cast<const WT*>(w + static_cast<size_t>(r) * w_row_bytes); };
  const auto ws = static_cast<int64_t>(w_row_bytes);
  const auto xs = static_cast<int64_t>(x_row_bytes);
  // `nr` rows `stride` bytes apart from `wr`, all tokens: out[t * ld + i].
  auto tile_all_tokens = [&](const WT* wr, int64_t stride, int nr, float* out, int64_t ld) {
    for (int t0 = 0; t0 < n_tokens; t0 += max_tokens) {
      tile(wr, stride, nr, advance_bytes(x, t0 * xs), xs, std::min(max_tokens, n_tokens - t0), cols, out + t0 * ld, ld);
    }
  };
  const int64_t n = r_end - r_begin;
  const auto streams = static_cast<int>(std::min<int64_t>({max_rows, n_streams, kMaxStreams, n / kMinStreamRows}));
  int64_t r = r_begin;
  if (streams > 1) {
    const int64_t len = n / streams;
    float out[kMaxStreamTokens * kMaxStreams];  // [token][stream]
    for (int64_t j = 0; j < len; ++j) {
      tile_all_tokens(row(r_begin + j), len * ws, streams, out, kMaxStreams);
      for (int t = 0; t < n_tokens; ++t) {
        for (int s = 0; s < streams; ++s) y[t * rows + r_begin + s * len + j] = out[t * kMaxStreams + s];
      }
    }
    r = r_begin + streams * len;
  }
  // The rest (or all, for short ranges) one row after another.
  for (; r < r_end; ++r) tile_all_tokens(row(r), ws, 1, y + r, rows);
}

// Computes y[t, r] for r in [r_begin, r_end) and all tokens, tile by tile;
// kDotRows rows at a time share the activation loads (bit-identical to the
// single-row dot, so where the groups start does not matter). WT/XT are the
// kernel's weight and activation element types.
template <typename WT, typename XT>
void compute_rows(float (*dot)(const WT*, const XT*, int64_t),
                  void (*dot_rows)(const WT*, int64_t, const XT*, int64_t, float*), const uint8_t* w,
                  size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, int64_t cols, int64_t rows,
                  int64_t n_tokens, float* y, int64_t r_begin, int64_t r_end, bool group_rows, int n_streams) {
  const auto stride = static_cast<int64_t>(w_row_bytes);
  if (n_tokens == 1 && dot_rows != nullptr && n_streams > 1) {
    // Decode: kDotRows rows a sub-range apart per call (decode_streams).
    auto rows_fn = [&](const WT* wr, int64_t ws, int nr, const XT* xt, int64_t, int, int64_t n, float* out, int64_t) {
      if (nr == kDotRows) {
        dot_rows(wr, ws, xt, n, out);
        return;
      }
      for (int r = 0; r < nr; ++r) {
        out[r] = dot(advance_bytes(wr, r * ws), xt, n);
      }
    };
    decode_streams<WT>(rows_fn, kDotRows, 1, w, w_row_bytes, reinterpret_cast<const XT*>(x), x_row_bytes, cols, rows, 1,
                       y, r_begin, r_end, n_streams);
    return;
  }
  const int64_t tile =
      n_tokens == 1 ? (r_end - r_begin)
                    : std::max<int64_t>(kDotRows, static_cast<int64_t>(kTileBytes / w_row_bytes) / kDotRows * kDotRows);
  auto w_row = [&](int64_t r) { return reinterpret_cast<const WT*>(w + static_cast<size_t>(r) * w_row_bytes); };
  for (int64_t r0 = r_begin; r0 < r_end; r0 += tile) {
    const int64_t r1 = std::min(r_end, r0 + tile);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* xt = reinterpret_cast<const XT*>(x + static_cast<size_t>(t) * x_row_bytes);
      float* yt = y + t * rows;  // [rows]
      int64_t r = r0;
      if (group_rows) {
        for (; r + kDotRows <= r1; r += kDotRows) dot_rows(w_row(r), stride, xt, cols, yt + r);
      }
      for (; r < r1; ++r) yt[r] = dot(w_row(r), xt, cols);
    }
  }
}

// Pointer into `scratch` aligned to 64 bytes with room for `bytes` more.
uint8_t* aligned_scratch(std::vector<uint8_t>& scratch, size_t bytes) {
  if (scratch.size() < bytes + 64) scratch.resize(bytes + 64);
  const auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + ((64 - addr % 64) % 64);
}

// The tiled path (k.gemm): as many tokens as one tile takes go through
// decode_streams; otherwise (and for k.decode_streams == 1) rows in L2-sized
// chunks per thread, inside a chunk tokens in
// groups of `tile_tokens` and rows in groups of `tile_rows`, each
// (rows × tokens) tile one kernel call over the whole reduction.
// kGroupedStreams: steps of more tokens than one tile call takes (up to
// kMaxStreamTokens) also go through decode_streams, in token groups. On the
// Zen 5 VM (BM_FewRows, 2 threads, medians of alternated builds) that took
// Q4_0 0.77x / 0.81x the L2-chunked time at 5 / 8 rows, Q8_0 0.89x / 0.90x,
// F16 0.95x at 8 rows, but Q4_K 1.06x / 1.03x; the K-quants (Q6_K by analogy,
// not measured) keep the L2-chunked path.
template <typename WT, typename XT, bool kGroupedStreams = true, typename TileFn>
void tiled_rows(TileFn tile, int tile_rows, int tile_tokens, const uint8_t* w, size_t w_row_bytes, const uint8_t* x,
                size_t x_row_bytes, int64_t cols, int64_t rows, int64_t n_tokens, float* y, int64_t r_begin,
                int64_t r_end, int n_streams) {
  const int64_t max_stream_tokens =
      kGroupedStreams ? kMaxStreamTokens : std::min<int64_t>(tile_tokens, kMaxStreamTokens);
  if (n_tokens <= max_stream_tokens && n_streams > 1) {
    decode_streams<WT>(tile, tile_rows, tile_tokens, w, w_row_bytes, reinterpret_cast<const XT*>(x), x_row_bytes, cols,
                       rows, static_cast<int>(n_tokens), y, r_begin, r_end, n_streams);
    return;
  }
  // decode_streams == 1 keeps the previous decode exactly: quantized
  // rows one at a time, float rows in tiles of adjacent rows.
  if (n_tokens == 1 && !std::is_same_v<XT, float>) tile_rows = 1;
  const int64_t chunk =
      n_tokens == 1
          ? (r_end - r_begin)
          : std::max<int64_t>(tile_rows, static_cast<int64_t>(kTileBytes / w_row_bytes) / tile_rows * tile_rows);
  const auto ws = static_cast<int64_t>(w_row_bytes);
  const auto xs = static_cast<int64_t>(x_row_bytes);
  for (int64_t c0 = r_begin; c0 < r_end; c0 += chunk) {
    const int64_t c1 = std::min(r_end, c0 + chunk);
    for (int64_t t = 0; t < n_tokens; t += tile_tokens) {
      const int nt = static_cast<int>(std::min<int64_t>(tile_tokens, n_tokens - t));
      const auto* xt = reinterpret_cast<const XT*>(x + static_cast<size_t>(t) * x_row_bytes);
      for (int64_t r = c0; r < c1; r += tile_rows) {
        const int nr = static_cast<int>(std::min<int64_t>(tile_rows, c1 - r));
        tile(reinterpret_cast<const WT*>(w + static_cast<size_t>(r) * w_row_bytes), ws, nr, xt, xs, nt, cols,
             y + t * rows + r, rows);
      }
    }
  }
}

// Token groups per call from which widened_rows replaces the f16 / bf16
// tiles: below it the chunk's conversion is not shared by enough groups.
constexpr int64_t kWidenMinTokenGroups = 2;

}  // namespace

HalfRowWidener half_row_widener(const Kernels& k, DType t, int64_t n_tokens) {
  const GemmKernels* g = k.gemm;
  if (!k.widen_half_rows || g == nullptr || n_tokens < kWidenMinTokenGroups * g->float_tokens) return nullptr;
  return t == DType::kF16 ? g->widen_f16 : t == DType::kBF16 ? g->widen_bf16 : nullptr;
}

namespace {

// F16 / BF16 rows through the f32 tile (gemm.h widen_f16): the chunked loop
// of tiled_rows, each L2 chunk of weight rows widened once into `wide`
// (a per-thread buffer, rows padded by one cache line so that the tile's rows
// do not map to the same L1 sets) and read by tile_f32 for every token group.
void widened_rows(const GemmKernels& g, void (*widen)(const uint16_t*, float*, int64_t), const uint8_t* w,
                  size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, int64_t cols, int64_t rows,
                  int64_t n_tokens, float* y, int64_t r_begin, int64_t r_end) {
  const int tile_rows = g.float_rows, tile_tokens = g.float_tokens;
  const int64_t wide_row = (cols + 15) / 16 * 16 + 16;  // floats; 64-byte multiple
  const size_t wide_row_bytes = static_cast<size_t>(wide_row) * sizeof(float);
  const int64_t chunk =
      std::max<int64_t>(tile_rows, static_cast<int64_t>(kTileBytes / wide_row_bytes) / tile_rows * tile_rows);
  thread_local std::vector<uint8_t> wide_buf;
  auto* wide = reinterpret_cast<float*>(aligned_scratch(wide_buf, wide_row_bytes * static_cast<size_t>(chunk)));
  // wide: [chunk, wide_row] f32
  const auto xs = static_cast<int64_t>(x_row_bytes);
  for (int64_t c0 = r_begin; c0 < r_end; c0 += chunk) {
    const int64_t c1 = std::min(r_end, c0 + chunk);
    for (int64_t r = c0; r < c1; ++r) {
      widen(reinterpret_cast<const uint16_t*>(w + static_cast<size_t>(r) * w_row_bytes), wide + (r - c0) * wide_row,
            cols);
    }
    for (int64_t t = 0; t < n_tokens; t += tile_tokens) {
      const int nt = static_cast<int>(std::min<int64_t>(tile_tokens, n_tokens - t));
      const auto* xt = reinterpret_cast<const float*>(x + static_cast<size_t>(t) * x_row_bytes);
      for (int64_t r = c0; r < c1; r += tile_rows) {
        const int nr = static_cast<int>(std::min<int64_t>(tile_rows, c1 - r));
        g.tile_f32(wide + (r - c0) * wide_row, static_cast<int64_t>(wide_row_bytes), nr, xt, xs, nt, cols,
                   y + t * rows + r, rows);
      }
    }
  }
}

// The loops over panels [p_begin, p_end) shared by the bf16 and int16
// panel layouts. A step of up to max_tokens tokens reads the panels as up to
// kMaxStreams sequential streams walked together (decode_streams), one tile
// of up to stream_panels panels a sub-range apart per call; larger steps take
// L2 chunks of panels, tokens in groups of max_tokens, panels in groups of
// max_panels. tile(p, stride, np, t0, nt) computes np panels from panel p,
// `stride` panels apart, for tokens [t0, t0 + nt).
template <typename Tile>
void walk_panels(int64_t p_begin, int64_t p_end, int64_t n_tokens, int max_panels, int max_tokens, int stream_panels,
                 int64_t panel_bytes, int n_streams, Tile&& tile) {
  if (p_begin >= p_end) return;
  if (n_tokens <= max_tokens && n_streams > 1) {
    const int64_t n = p_end - p_begin;
    const auto streams = static_cast<int>(std::min<int64_t>({stream_panels, n_streams, kMaxStreams, n}));
    const int64_t len = n / streams;
    for (int64_t j = 0; j < len; ++j) tile(p_begin + j, len, streams, 0, n_tokens);
    for (int64_t p = p_begin + streams * len; p < p_end; ++p) tile(p, 1, 1, 0, n_tokens);
    return;
  }
  const int64_t chunk = std::max<int64_t>(max_panels, kTileBytes / panel_bytes / max_panels * max_panels);
  for (int64_t c0 = p_begin; c0 < p_end; c0 += chunk) {
    const int64_t c1 = std::min(p_end, c0 + chunk);
    for (int64_t t = 0; t < n_tokens; t += max_tokens) {
      const int64_t nt = std::min<int64_t>(max_tokens, n_tokens - t);
      for (int64_t p = c0; p < c1; p += max_panels) tile(p, 1, std::min<int64_t>(max_panels, c1 - p), t, nt);
    }
  }
}

// BF16 rows [r_begin, r_end) (whole panels; r_end may be the end of a last
// panel of fewer rows) of a matrix in the bf16 panel layout
// (weight_layout.h) through tile_bf16_dp, x packed by pack_bf16, in the
// loops of walk_panels (streams of up to bf16_panels panels). A last panel
// of h < 16 rows goes through tile_bf16_dp_part.
void panel_rows(const GemmKernels& g, const uint8_t* w, int64_t cols, int64_t rows, const uint8_t* x,
                size_t x_row_bytes, int64_t n_tokens, float* y, int64_t r_begin, int64_t r_end, int n_streams) {
  const auto panel_bytes = static_cast<int64_t>(kBf16PanelRows * cols * sizeof(uint16_t));
  auto panel = [&](int64_t p) { return reinterpret_cast<const uint16_t*>(w + p * panel_bytes); };
  const auto xs = static_cast<int64_t>(x_row_bytes);
  auto xt = [&](int64_t t) { return reinterpret_cast<const uint16_t*>(x + static_cast<size_t>(t) * x_row_bytes); };
  const int64_t p_begin = r_begin / kBf16PanelRows, p_end = r_end / kBf16PanelRows;  // full panels
  if (const auto h = static_cast<int>(r_end - p_end * kBf16PanelRows); h > 0) {
    for (int64_t t = 0; t < n_tokens; t += g.bf16_tokens) {
      const int nt = static_cast<int>(std::min<int64_t>(g.bf16_tokens, n_tokens - t));
      g.tile_bf16_dp_part(panel(p_end), h, xt(t), xs, nt, cols, y + t * rows + p_end * kBf16PanelRows, rows);
    }
  }
  walk_panels(p_begin, p_end, n_tokens, g.bf16_panels, g.bf16_tokens, g.bf16_panels, panel_bytes, n_streams,
              [&](int64_t p, int64_t stride, int64_t np, int64_t t0, int64_t nt) {
                g.tile_bf16_dp(panel(p), stride * panel_bytes, static_cast<int>(np), xt(t0), xs, static_cast<int>(nt),
                               cols, y + t0 * rows + p * kBf16PanelRows, rows, stride * kBf16PanelRows);
              });
}

// F16 rows [r_begin, r_end) (whole panels) of a matrix in the int16 panel
// layout (weight_layout.h) through tile_i16, x packed as pack_i16_ref does, in the
// loops of walk_panels (streams of i16_stream_panels panels for one token,
// i16_panels for more).
void i16_panel_rows(const GemmKernels& g, const MatrixView& w, const uint8_t* x, size_t x_row_bytes, int64_t n_tokens,
                    float* y, int64_t r_begin, int64_t r_end, int n_streams) {
  const int64_t cols = w.cols, rows = w.rows;
  const int64_t pr = g.i16_panel_rows;
  TESSERA_CHECK(r_begin % pr == 0 && r_end % pr == 0);  // whole panels (kRowGranule, fits_i16_panels)
  const auto panel_bytes = static_cast<int64_t>(pr * cols * sizeof(int16_t));
  const int64_t panel_scales = cols / kI16GroupCols * pr;  // floats
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const auto xs = static_cast<int64_t>(x_row_bytes);
  walk_panels(r_begin / pr, r_end / pr, n_tokens, g.i16_panels, g.i16_tokens,
              n_tokens == 1 ? g.i16_stream_panels : g.i16_panels, panel_bytes, n_streams,
              [&](int64_t p, int64_t stride, int64_t np, int64_t t0, int64_t nt) {
                g.tile_i16(reinterpret_cast<const int16_t*>(wb + p * panel_bytes), stride * panel_bytes,
                           w.i16_scales + p * panel_scales, stride * panel_scales, static_cast<int>(np),
                           x + static_cast<size_t>(t0) * x_row_bytes, xs, static_cast<int>(nt), cols,
                           y + t0 * rows + p * pr, rows, stride * pr);
              });
}

// Float weights and the GGUF-layout super-block type (Q6_K, reads_q8k_rows)
// in any layout where the set has its tile; the x16 types (Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q4_K /
// Q5_K / Q3_K / Q2_K) once prepare_matrix has put them in the x16 layout (a kernel table without their tile kernels
// reads GGUF rows).
bool has_tile_kernel(const GemmKernels& g, const MatrixView& w) {
  if (w.layout != WeightLayout::kGguf) return true;  // x16, bf16 or int16 panels
  return (w.dtype == DType::kF32 || w.dtype == DType::kF16 || w.dtype == DType::kBF16 || reads_q8k_rows(w.dtype)) &&
         has_tile(g, w.dtype);
}

// BF16 panels go through the bf16-activation tile (gemm.h tile_bf16_dp).
bool uses_bf16_activations(bool tiled, const MatrixView& w) {
  return tiled && w.layout == WeightLayout::kBf16Panel;
}

// Chunks per thread for dynamic scheduling (for_row_chunks).
constexpr int64_t kChunksPerThread = 4;

// Splits [0, rows) over the pool in kRowGranule multiples and runs
// body(r0, r1): one static share per thread, or, when `dynamic`, about
// kChunksPerThread chunks per thread handed out in order by an atomic
// counter, so that a thread the VM slows down takes fewer instead of the
// other waiting for it at the join (decode: ~5 points of the roofline on
// average on this VM; prefill measured no better). Which thread computes a
// row never changes its bits.
template <typename Body>
void for_row_chunks(ThreadPool& pool, int64_t rows, bool dynamic, Body&& body) {
  const int nt = pool.size();
  if (nt == 1 || rows < 2 * kRowGranule) {
    body(0, rows);
    return;
  }
  const int64_t granules = (rows + kRowGranule - 1) / kRowGranule;
  if (dynamic) {
    const int64_t per = std::max<int64_t>(1, granules / (nt * kChunksPerThread));
    std::atomic<int64_t> next{0};
    pool.run([&](int, int) {
      for (;;) {
        const int64_t g0 = next.fetch_add(per, std::memory_order_relaxed);
        if (g0 >= granules) return;
        body(g0 * kRowGranule, std::min(rows, (g0 + per) * kRowGranule));
      }
    });
    return;
  }
  pool.run([&](int i, int n) {
    const int64_t r0 = std::min(rows, granules * i / n * kRowGranule);
    const int64_t r1 = std::min(rows, granules * (i + 1) / n * kRowGranule);
    if (r0 < r1) body(r0, r1);
  });
}

// Runs fn(t0, t1) over the token range, fanned out only for batches (one
// row costs about as much as a thread wake-up).
template <typename Fn>
void for_tokens(ThreadPool& pool, int64_t n_tokens, Fn&& fn) {
  if (n_tokens >= 4 * pool.size()) {
    pool.parallel_for(n_tokens, fn);
  } else {
    fn(0, n_tokens);
  }
}

// The activations in the form the row kernels take: f32 rows as they are,
// or quantized once per row (Q8_0 / Q8_K blocks, or packed Q8_0 groups for
// the tile kernels) into `scratch`.
struct Activations {
  const uint8_t* data;
  size_t row_bytes;
};

Activations prepare_activations(ThreadPool& pool, const Kernels& k, DType w_dtype, bool tiled, bool bf16_activations,
                                bool i16_activations, const float* x, int64_t n_tokens, int64_t cols,
                                std::vector<uint8_t>& scratch) {
  if (i16_activations) {
    // Rows quantized to int16 groups (gemm.h quantize_i16, as pack_i16_ref), 64-byte aligned,
    // plus one cache line (see the bf16 rows below).
    const size_t row_bytes = static_cast<size_t>(packed_i16_row_bytes(cols) + 63) / 64 * 64 + 64;
    uint8_t* q = aligned_scratch(scratch, row_bytes * static_cast<size_t>(n_tokens));  // [n_tokens, row_bytes]
    for_tokens(pool, n_tokens, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        uint8_t* row = q + static_cast<size_t>(t) * row_bytes;  // quants, then scales (pack_i16_ref)
        k.gemm->quantize_i16(x + t * cols, reinterpret_cast<int16_t*>(row), reinterpret_cast<float*>(row + 2 * cols),
                             cols, kI16ActMax);
      }
    });
    return {q, row_bytes};
  }
  if (bf16_activations) {
    // Rows rounded to bf16 for vdpbf16ps (gemm.h pack_bf16).
    const int64_t elems = packed_bf16_row_elems(cols);
    // A multiple of 64, plus one cache line: rows of 2048 columns would be
    // 4 KiB apart, and a tile's 6 rows plus its 4 weight streams would all
    // map to one 8-way L1 set.
    const size_t row_bytes = static_cast<size_t>(elems) * sizeof(uint16_t) + 64;
    const auto row_elems = static_cast<int64_t>(row_bytes / sizeof(uint16_t));
    auto* q = reinterpret_cast<uint16_t*>(aligned_scratch(scratch, row_bytes * static_cast<size_t>(n_tokens)));
    // q: [n_tokens, row_elems], the first elems of each row packed
    for_tokens(pool, n_tokens, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) k.gemm->pack_bf16(x + t * cols, q + t * row_elems, cols);
    });
    return {reinterpret_cast<const uint8_t*>(q), row_bytes};
  }
  const DType act = dtype_vec_dot_type(w_dtype);
  if (act == DType::kF32) return {reinterpret_cast<const uint8_t*>(x), static_cast<size_t>(cols) * sizeof(float)};
  // One row of x into `out`, in the form the weight's kernels take.
  const int32_t offset = x16_act_offset(w_dtype);
  // The Q6_K tile reads plain Q8_K rows, like its dot product.
  const bool packed = tiled && !reads_q8k_rows(w_dtype);
  auto quantize = [&](const float* xt, uint8_t* out) {
    if (packed && act == DType::kQ8_K) {
      k.gemm->pack_q8k(xt, reinterpret_cast<PackedQ8KGroup*>(out), cols);
    } else if (packed) {
      k.gemm->pack_q8x16(xt, reinterpret_cast<PackedQ8x16Group*>(out), cols, offset);
    } else if (act == DType::kQ8_K) {
      k.quant->quantize_row_q8_k(xt, reinterpret_cast<BlockQ8_K*>(out), cols);
    } else {
      k.quantize_row_q8_0(xt, reinterpret_cast<BlockQ8_0*>(out), cols);
    }
  };
  const size_t row_bytes = !packed               ? dtype_row_bytes(act, cols)
                           : act == DType::kQ8_K ? packed_q8k_row_bytes(cols)
                                                 : packed_q8x16_row_bytes(cols);
  // Packed groups are 64-byte aligned (row_bytes is a multiple of 64 then).
  uint8_t* q = aligned_scratch(scratch, row_bytes * static_cast<size_t>(n_tokens));  // [n_tokens, row_bytes]
  for_tokens(pool, n_tokens, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) quantize(x + t * cols, q + static_cast<size_t>(t) * row_bytes);
  });
  return {q, row_bytes};
}

// Rows [r0, r1) of y[n_tokens, w.rows] = x · wᵀ for every token.
void compute_matrix_rows(const Kernels& k, bool tiled, bool bf16x, const MatrixView& w, const Activations& x,
                         int64_t n_tokens, float* y, int64_t r0, int64_t r1) {
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const size_t w_row_bytes = dtype_row_bytes(w.dtype, w.cols);
  const int64_t cols = w.cols;
  const int64_t rows = w.rows;
  if (tiled) {
    const GemmKernels& g = *k.gemm;
    if (w.layout == WeightLayout::kI16Panel) {
      i16_panel_rows(g, w, x.data, x.row_bytes, n_tokens, y, r0, r1, k.decode_streams);
      return;
    }
    const TileShape shape = quant_tile_shape(g, w.dtype, n_tokens);  // (quantized types)
    switch (w.dtype) {
      case DType::kQ8_0:
      case DType::kQ4_0:
      case DType::kQ4_1:
      case DType::kQ5_0:
      case DType::kQ5_1:
        tiled_rows<uint8_t, PackedQ8x16Group>(x16_tile(g, w.dtype), shape.rows, shape.tokens, wb, w_row_bytes, x.data,
                                              x.row_bytes, cols, rows, n_tokens, y, r0, r1, k.decode_streams);
        return;
      case DType::kQ4_K:
      case DType::kQ5_K:
      case DType::kQ3_K:
      case DType::kQ2_K:
        tiled_rows<uint8_t, PackedQ8KGroup, false>(k_x16_tile(g, w.dtype), shape.rows, shape.tokens, wb, w_row_bytes,
                                                   x.data, x.row_bytes, cols, rows, n_tokens, y, r0, r1,
                                                   k.decode_streams);
        return;
      case DType::kQ6_K:
        tiled_rows<uint8_t, BlockQ8_K, false>(q8k_tile(g, w.dtype), shape.rows, shape.tokens, wb, w_row_bytes, x.data,
                                              x.row_bytes, cols, rows, n_tokens, y, r0, r1, k.decode_streams);
        return;
      case DType::kF32:
        tiled_rows<float, float>(g.tile_f32, g.float_rows, g.float_tokens, wb, w_row_bytes, x.data, x.row_bytes, cols,
                                 rows, n_tokens, y, r0, r1, k.decode_streams);
        return;
      case DType::kF16:
        if (const HalfRowWidener widen = half_row_widener(k, w.dtype, n_tokens); widen != nullptr) {
          widened_rows(g, widen, wb, w_row_bytes, x.data, x.row_bytes, cols, rows, n_tokens, y, r0, r1);
          return;
        }
        tiled_rows<uint16_t, float>(g.tile_f16, g.float_rows, g.float_tokens, wb, w_row_bytes, x.data, x.row_bytes,
                                    cols, rows, n_tokens, y, r0, r1, k.decode_streams);
        return;
      default:
        if (bf16x) {
          panel_rows(g, wb, cols, rows, x.data, x.row_bytes, n_tokens, y, r0, r1, k.decode_streams);
          return;
        }
        if (const HalfRowWidener widen = half_row_widener(k, w.dtype, n_tokens); widen != nullptr) {
          widened_rows(g, widen, wb, w_row_bytes, x.data, x.row_bytes, cols, rows, n_tokens, y, r0, r1);
          return;
        }
        tiled_rows<uint16_t, float>(g.tile_bf16, g.float_rows, g.float_tokens, wb, w_row_bytes, x.data, x.row_bytes,
                                    cols, rows, n_tokens, y, r0, r1, k.decode_streams);
        return;
    }
  }
  // Row groups of adjacent rows pay off when the activation row is large
  // (f32 x for float weights: 4 bytes per element next to 2 of weight) or
  // when the weights come from cache (prefill tiles; Q4_K_M prefill +4-5%).
  // Quantized decode reads rows far apart instead (decode_streams in
  // compute_rows). Either choice gives bit-identical results.
  const bool quantized = dtype_vec_dot_type(w.dtype) != DType::kF32;
  const bool multi_row_kernel = w.dtype == DType::kQ8_0 || w.dtype == DType::kQ4_0 || w.dtype == DType::kQ4_K ||
                                w.dtype == DType::kQ5_K || w.dtype == DType::kQ6_K || !quantized;
  const bool group_rows = multi_row_kernel && (!quantized || n_tokens > 1);
  auto run = [&](auto dot, auto dot_rows) {
    compute_rows(dot, dot_rows, wb, w_row_bytes, x.data, x.row_bytes, cols, rows, n_tokens, y, r0, r1, group_rows,
                 k.decode_streams);
  };
  // Formats without a multi-row kernel: one dot product per row.
  auto run_single = [&](auto dot) {
    using Dot = decltype(dot);
    run(dot, static_cast<void (*)(first_arg_t<Dot>, int64_t, second_arg_t<Dot>, int64_t, float*)>(nullptr));
  };
  switch (w.dtype) {
    case DType::kF32:
      run(k.dot_f32, k.dot_rows_f32);
      return;
    case DType::kF16:
      run(k.dot_f16, k.dot_rows_f16);
      return;
    case DType::kBF16:
      run(k.dot_bf16, k.dot_rows_bf16);
      return;
    case DType::kQ8_0:
      run(k.dot_q8_0, k.dot_rows_q8_0);
      return;
    case DType::kQ4_0:
      run(k.dot_q4_0, k.dot_rows_q4_0);
      return;
    case DType::kQ4_1:
      run_single(k.quant->dot_q4_1);
      return;
    case DType::kQ5_0:
      run_single(k.quant->dot_q5_0);
      return;
    case DType::kQ5_1:
      run_single(k.quant->dot_q5_1);
      return;
    case DType::kQ2_K:
      run_single(k.quant->dot_q2_k);
      return;
    case DType::kQ3_K:
      run_single(k.quant->dot_q3_k);
      return;
    case DType::kQ4_K:
      run(k.quant->dot_q4_k, k.quant->dot_rows_q4_k);
      return;
    case DType::kQ5_K:
      run(k.quant->dot_q5_k, k.quant->dot_rows_q5_k);
      return;
    case DType::kQ6_K:
      run(k.quant->dot_q6_k, k.quant->dot_rows_q6_k);
      return;
    case DType::kQ8_K:
      return;  // rejected by matmul_multi
  }
}

}  // namespace

void matmul_multi(ThreadPool& pool, const Kernels& k, std::span<const MatmulTarget> targets, const float* x,
                  int64_t n_tokens, std::vector<uint8_t>& scratch) {
  if (n_tokens <= 0 || targets.empty()) return;
  const MatrixView& w0 = targets.front().w;
  // Stacked bf16 panels must start on panel boundaries (row chunks are cut
  // in 16-row granules of the stack): only the last matrix may end in a
  // partial panel.
  const bool panel_aligned = std::all_of(targets.begin(), targets.end() - 1,
                                         [](const MatmulTarget& t) { return t.w.rows % kBf16PanelRows == 0; });
  const bool shared = (w0.layout != WeightLayout::kBf16Panel || panel_aligned) &&
                      std::all_of(targets.begin(), targets.end(), [&](const MatmulTarget& t) {
                        return t.w.dtype == w0.dtype && t.w.cols == w0.cols && t.w.layout == w0.layout &&
                               t.w.f32_activations == w0.f32_activations;
                      });
  if (!shared) {
    for (const MatmulTarget& t : targets)
      matmul_multi(pool, k, std::span<const MatmulTarget>(&t, 1), x, n_tokens, scratch);
    return;
  }
  TESSERA_CHECK(w0.dtype != DType::kQ8_K);  // an activation format, never a weight
  TESSERA_CHECK(dtype_vec_dot_type(w0.dtype) == DType::kF32 || w0.cols % dtype_block_elems(w0.dtype) == 0);
  // x16 rows and bf16 panels need the tile kernels.
  TESSERA_CHECK(w0.layout == WeightLayout::kGguf || k.gemm != nullptr);
  TESSERA_CHECK(w0.layout != WeightLayout::kBf16Panel || k.gemm->tile_bf16_dp != nullptr);
  TESSERA_CHECK(w0.layout != WeightLayout::kI16Panel || k.gemm->tile_i16 != nullptr);
  const bool tiled = k.gemm != nullptr && has_tile_kernel(*k.gemm, w0);
  const bool bf16x = uses_bf16_activations(tiled, w0);
  const bool i16x = tiled && w0.layout == WeightLayout::kI16Panel;
  const Activations act = prepare_activations(pool, k, w0.dtype, tiled, bf16x, i16x, x, n_tokens, w0.cols, scratch);
  int64_t total = 0;
  for (const MatmulTarget& t : targets) total += std::max<int64_t>(0, t.w.rows);
  // One parallel region over the rows of all matrices, as if stacked.
  const bool dynamic = n_tokens <= kMaxStreamTokens && k.decode_streams > 1;
  for_row_chunks(pool, total, dynamic, [&](int64_t g0, int64_t g1) {
    int64_t offset = 0;
    for (const MatmulTarget& t : targets) {
      const int64_t lo = std::max(g0, offset), hi = std::min(g1, offset + t.w.rows);
      if (lo < hi) compute_matrix_rows(k, tiled, bf16x, t.w, act, n_tokens, t.y, lo - offset, hi - offset);
      offset += std::max<int64_t>(0, t.w.rows);
    }
  });
}

void matmul(ThreadPool& pool, const Kernels& k, const MatrixView& w, const float* x, int64_t n_tokens, float* y,
            std::vector<uint8_t>& scratch) {
  const MatmulTarget target{w, y};
  matmul_multi(pool, k, std::span<const MatmulTarget>(&target, 1), x, n_tokens, scratch);
}

}  // namespace tessera::cpu
