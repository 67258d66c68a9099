// Matmul throughput per weight dtype: decode (n_tokens = 1) in GB/s of weight
// read, to compare with the read-bandwidth roofline, and prefill
// (n_tokens = 64) and batched decode (n_tokens = 16) in GFLOP/s. DecodeHot
// repeats one L3-resident matrix: the kernel's compute ceiling.
// TESSERA_ISA=scalar|avx2|avxvnni|avx512 picks the path; tiled=0 runs the same ISA
// without its tile kernels (one dot product per (row, token), the previous
// matmul) so both versions are measured side by side in one run.
//
//   ./build-kernels/bench/kernels_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/bandwidth.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/paged_attention.h"
#include "core/quant_ref.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"

namespace tessera::cpu {
namespace {

// The kernel table under test: the best ISA, or TESSERA_ISA's (the library
// reads no environment; this benchmark does, as the CLI does).
// TESSERA_BENCH_TILE=RxT (this benchmark only) replaces the quantized
// prefill tile shape of Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q2_K and Q3_K (R <= quant_rows, T <=
// quant_tokens), to compare shapes in one binary; TESSERA_BENCH_DECODE_ROWS=R
// (R <= quant_rows) the decode rows of Q5_K, Q6_K and Q3_K.
// The table is the engine's (kernels_with), so widen_half_rows follows the
// CPU; TESSERA_BENCH_WIDEN=0 or 1 (this benchmark only) overrides it.
// TESSERA_BENCH_NO_BF16=1 (this benchmark only) takes the tile kernels of
// AVX-512 CPUs without AVX512-BF16 (kernels_without_avx512_bf16: F16 and
// BF16 then take the int16 panels). TESSERA_BENCH_VNNI_EVEX=1 (this benchmark
// only, on CPUs with AVX-512 VNNI) takes the AVX-VNNI tile kernels with the
// EVEX encoding of their vpdpbusd / vpdpwssd (avx_vnni_kernels_as_evex);
// with TESSERA_ISA=avx2 the rest of the table is the AVX-VNNI table's too.
bool bench_vnni_evex() {
  const char* evex = std::getenv("TESSERA_BENCH_VNNI_EVEX");
  return evex != nullptr && std::string(evex) == "1" && cpu_features().avx512_vnni;
}

const Kernels& bench_kernels() {
  static const Isa isa = [] {
    const char* env = std::getenv("TESSERA_ISA");
    auto named = env != nullptr ? isa_from_name(env) : std::nullopt;
    for (Isa s : supported_isas()) {
      if (named && s == *named) return s;
    }
    return best_isa();
  }();
  static GemmKernels gemm{};
  static const Kernels k = [&] {
    Kernels out = kernels_with(isa, /*tile_kernels=*/true, kDefaultDecodeStreams);
    if (const char* widen = std::getenv("TESSERA_BENCH_WIDEN"); widen != nullptr) {
      out.widen_half_rows = std::string(widen) == "1";
    }
    if (const char* no_bf16 = std::getenv("TESSERA_BENCH_NO_BF16");
        no_bf16 != nullptr && std::string(no_bf16) == "1" && out.gemm != nullptr) {
      out.gemm = kernels_without_avx512_bf16(isa).gemm;
    }
    // The AVX-VNNI tile kernels with EVEX vpdpbusd / vpdpwssd, on a CPU with
    // AVX-512 VNNI (kernels.h avx_vnni_kernels_as_evex).
    if (bench_vnni_evex() && out.gemm != nullptr) out.gemm = avx_vnni_kernels_as_evex().gemm;
    const char* tile = std::getenv("TESSERA_BENCH_TILE");
    int r = 0, t = 0;
    if (out.gemm != nullptr && tile != nullptr && std::sscanf(tile, "%dx%d", &r, &t) == 2 && r >= 1 &&
        r <= out.gemm->quant_rows && t >= 1 && t <= out.gemm->quant_tokens) {
      gemm = *out.gemm;
      gemm.q8_0_rows = gemm.q4_0_rows = gemm.q4_k_rows = gemm.q5_k_rows = gemm.q6_k_rows = gemm.q2_k_rows =
          gemm.q3_k_rows = r;
      gemm.q8_0_tokens = gemm.q4_0_tokens = gemm.q4_k_tokens = gemm.q5_k_tokens = gemm.q6_k_tokens = gemm.q2_k_tokens =
          gemm.q3_k_tokens = t;
      out.gemm = &gemm;
    }
    const char* decode_rows = std::getenv("TESSERA_BENCH_DECODE_ROWS");
    if (out.gemm != nullptr && decode_rows != nullptr && std::sscanf(decode_rows, "%d", &r) == 1 && r >= 1 &&
        r <= out.gemm->quant_rows) {
      if (out.gemm != &gemm) gemm = *out.gemm;
      gemm.q5_k_decode_rows = gemm.q6_k_decode_rows = gemm.q3_k_decode_rows = r;
      out.gemm = &gemm;
    }
    return out;
  }();
  return k;
}

// 2048 x 8192: a 1B-class FFN projection (64 MiB in f32, 9 MiB in Q4_0).
constexpr int64_t kRows = 2048;
constexpr int64_t kCols = 8192;

struct Weights {
  // Enough copies that one round over them exceeds a 32 MiB L3 by 4x, so the
  // decode figure measures DRAM rather than cache.
  std::vector<std::vector<uint8_t>> copies;
  // The same copies in the x16 layout (Q4_0 / Q8_0 / Q4_K where the tile
  // kernels exist) or as bf16 panels (BF16 where the table has
  // tile_bf16_dp): what a Transformer hands the tiled matmul; empty otherwise.
  std::vector<std::vector<uint8_t>> x16;
  WeightLayout layout = WeightLayout::kGguf;   // of the x16 copies
  std::vector<std::vector<float>> i16_scales;  // kI16Panel: each copy's scales
};

// F16 and BF16 as int16 panels where the table has tile_i16 and no
// tile_bf16_dp (AVX2; AVX-512 under TESSERA_BENCH_NO_BF16=1), as the engine's
// default --f16-matmul auto does; TESSERA_BENCH_F16_EXACT=1 (this benchmark
// only) keeps the exact F16 and BF16 tiles, to compare both in one build.
// (Where the table has tile_bf16_dp this benchmark measures F16 exactly, as
// it always did.)
bool bench_f16_as_i16() {
  const char* exact = std::getenv("TESSERA_BENCH_F16_EXACT");
  return exact == nullptr || std::string(exact) != "1";
}

// A (rows x cols) matrix of type t, cached per shape.
const Weights& weights(DType t, int64_t rows = kRows, int64_t cols = kCols) {
  static std::map<std::tuple<DType, int64_t, int64_t>, Weights> cache;
  const auto key = std::make_tuple(t, rows, cols);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(cols));
  const size_t row_bytes = dtype_row_bytes(t, cols);
  std::vector<uint8_t> one(row_bytes * rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& f : row) f = dist(rng);
    quantize_row(t, row.data(), one.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  Weights w;
  const size_t target = size_t{128} << 20;
  const size_t n_copies = std::max<size_t>(1, (target + one.size() - 1) / one.size());
  for (size_t i = 0; i < n_copies; ++i) w.copies.push_back(one);
  const GemmKernels* g = bench_kernels().gemm;
  if (g != nullptr && has_x16_layout(t) && has_tile(*g, t)) {
    std::vector<uint8_t> packed(one.size());
    repack_rows_x16(t, one.data(), packed.data(), rows, cols);
    for (size_t i = 0; i < n_copies; ++i) w.x16.push_back(packed);
    w.layout = WeightLayout::kX16;
  } else if (g != nullptr && g->tile_bf16_dp != nullptr && t == DType::kBF16) {
    std::vector<uint8_t> packed(one.size());
    repack_rows_bf16_panel(reinterpret_cast<const uint16_t*>(one.data()), reinterpret_cast<uint16_t*>(packed.data()),
                           rows, cols);
    for (size_t i = 0; i < n_copies; ++i) w.x16.push_back(packed);
    w.layout = WeightLayout::kBf16Panel;
  } else if (g != nullptr && g->tile_i16 != nullptr && g->tile_bf16_dp == nullptr &&
             (t == DType::kF16 || t == DType::kBF16) && bench_f16_as_i16() &&
             fits_i16_panels(rows, cols, g->i16_panel_rows)) {
    std::vector<uint8_t> packed(one.size());
    std::vector<float> scales(static_cast<size_t>(rows * cols / 64));
    repack_rows_as_i16_panel(t, reinterpret_cast<const uint16_t*>(one.data()),
                             reinterpret_cast<int16_t*>(packed.data()), scales.data(), rows, cols, g->i16_panel_rows,
                             g);
    for (size_t i = 0; i < n_copies; ++i) {
      w.x16.push_back(packed);
      w.i16_scales.push_back(scales);
    }
    w.layout = WeightLayout::kI16Panel;
  }
  return cache.emplace(key, std::move(w)).first->second;
}

// The best ISA's table, optionally without its tile kernels.
const Kernels& table(bool tiled) {
  static const Kernels untiled = [] {
    Kernels k = bench_kernels();
    k.gemm = nullptr;
    return k;
  }();
  return tiled ? bench_kernels() : untiled;
}

void run_matmul(benchmark::State& state, DType t, int64_t n_tokens, bool hot = false, int64_t rows = kRows,
                int64_t cols = kCols) {
  const int threads = static_cast<int>(state.range(0));
  const bool tiled = state.range(2) != 0;
  ThreadPool pool(threads);
  const Weights& w = weights(t, rows, cols);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols), 0.5f);  // [n_tokens, cols]
  std::vector<float> y(static_cast<size_t>(n_tokens * rows));        // [n_tokens, rows]
  std::vector<uint8_t> scratch;
  size_t i = 0;
  for (auto _ : state) {
    const bool x16 = tiled && !w.x16.empty();
    const auto& copies = x16 ? w.x16 : w.copies;
    const size_t c = hot ? 0 : i++ % copies.size();
    MatrixView view{t, copies[c].data(), rows, cols, x16 ? w.layout : WeightLayout::kGguf};
    if (x16 && w.layout == WeightLayout::kI16Panel) view.i16_scales = w.i16_scales[c].data();
    matmul(pool, table(tiled), view, x.data(), n_tokens, y.data(), scratch);
    benchmark::DoNotOptimize(y.data());
  }
  const double iters = static_cast<double>(state.iterations());
  const double bytes = static_cast<double>(dtype_row_bytes(t, cols)) * rows;
  state.counters["GB/s"] = benchmark::Counter(bytes * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * rows * cols * static_cast<double>(n_tokens) * iters / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(t)) + " " + isa_name(bench_kernels().isa) +
                 (tiled ? bench_vnni_evex() ? " tiled (avxvnni tiles, evex)" : " tiled" : " dot") +
                 (tiled && w.layout == WeightLayout::kI16Panel ? " int16" : "") +
                 (half_row_widener(table(tiled), t, n_tokens) != nullptr ? " widened" : ""));
}

void BM_Decode(benchmark::State& state) {
  run_matmul(state, static_cast<DType>(state.range(1)), 1);
}
// One matrix over and over (9 MiB in Q4_0, 17 MiB in Q8_0: L3-resident):
// the kernel's compute ceiling without DRAM.
void BM_DecodeHot(benchmark::State& state) {
  run_matmul(state, static_cast<DType>(state.range(1)), 1, true);
}
void BM_Batch16(benchmark::State& state) {
  run_matmul(state, static_cast<DType>(state.range(1)), 16);
}
void BM_Prefill64(benchmark::State& state) {
  run_matmul(state, static_cast<DType>(state.range(1)), 64);
}
// A prefill chunk of 64 tokens through the 1.1B shape's FFN matrices:
// shape 0 is gate / up (5632 x 2048), shape 1 down (2048 x 5632). With 2048
// columns a tile's packed activation rows fit L1, as in the model; the
// 8192 columns of BM_Prefill64 do not.
void BM_PrefillFfn(benchmark::State& state) {
  const bool down = state.range(3) != 0;
  run_matmul(state, static_cast<DType>(state.range(1)), 64, false, down ? 2048 : 5632, down ? 5632 : 2048);
}

// A speculative verification step's shape: one sequence's last token plus its
// k proposals (1 + k rows, k = 0..7) against DRAM-resident weights. Ideally
// as fast as one row while memory-bound (the rows share each weight read);
// the ratio to rows:1 is what verifying k proposals costs (spec_goodput.h).
void BM_FewRows(benchmark::State& state) {
  run_matmul(state, static_cast<DType>(state.range(1)), state.range(3));
}

// The same shapes on one L3-resident matrix: the tiles' compute ceiling at
// 1 + k rows, to tell a memory-bound verification step from a compute-bound
// one.
void BM_FewRowsHot(benchmark::State& state) {
  run_matmul(state, static_cast<DType>(state.range(1)), state.range(3), true);
}

void dtype_args(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K,
                  DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ5_K}) {
    for (int threads : {1, 2}) {
      for (int tiled : {0, 1}) b->Args({threads, static_cast<int64_t>(t), tiled});
    }
  }
}

// Repetitions with medians: a shared machine makes single runs noisy.
template <int kRepetitions>
void matmul_config(benchmark::internal::Benchmark* b) {
  b->Apply(dtype_args)
      ->ArgNames({"threads", "dtype", "tiled"})
      ->UseRealTime()
      ->MinTime(0.2)
      ->Repetitions(kRepetitions)
      ->ReportAggregatesOnly(true);
}
BENCHMARK(BM_Decode)->Apply(matmul_config<5>);
BENCHMARK(BM_FewRows)
    ->ArgsProduct({{1, 2},
                   {static_cast<int64_t>(DType::kF16), static_cast<int64_t>(DType::kQ8_0),
                    static_cast<int64_t>(DType::kQ4_0), static_cast<int64_t>(DType::kQ4_K)},
                   {1},
                   {1, 2, 3, 5, 8}})
    ->ArgNames({"threads", "dtype", "tiled", "rows"})
    ->UseRealTime()
    ->MinTime(0.2)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_FewRowsHot)
    ->ArgsProduct({{1, 2},
                   {static_cast<int64_t>(DType::kF16), static_cast<int64_t>(DType::kQ8_0),
                    static_cast<int64_t>(DType::kQ4_0), static_cast<int64_t>(DType::kQ4_K)},
                   {1},
                   {1, 2, 3, 4, 5, 8}})
    ->ArgNames({"threads", "dtype", "tiled", "rows"})
    ->UseRealTime()
    ->MinTime(0.2)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_DecodeHot)->Apply(matmul_config<3>);
BENCHMARK(BM_Batch16)->Apply(matmul_config<3>);
BENCHMARK(BM_Prefill64)->Apply(matmul_config<3>);
BENCHMARK(BM_PrefillFfn)
    ->ArgsProduct({{1, 2},
                   {static_cast<int64_t>(DType::kBF16), static_cast<int64_t>(DType::kQ8_0),
                    static_cast<int64_t>(DType::kQ4_0), static_cast<int64_t>(DType::kQ4_K),
                    static_cast<int64_t>(DType::kQ6_K)},
                   {1},
                   {0, 1}})
    ->ArgNames({"threads", "dtype", "tiled", "shape"})
    ->UseRealTime()
    ->MinTime(0.2)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

// Attention's P·V for one KV head at 512 cached positions (blocks of 16,
// 4 KV heads per cache row, head_dim 64), 8 query heads: the axpy_f16 loop
// (fused:0) against one attn_pv_f16 call per block (fused:1).
void BM_AttnPv(benchmark::State& state) {
  const Kernels& k = bench_kernels();
  const bool fused = state.range(0) != 0;
  if (fused && k.attn_pv_f16 == nullptr) {
    state.SkipWithError("this table has no attn_pv_f16");
    return;
  }
  constexpr int kHeads = 8, kBlock = 16, kHeadDim = 64, kKvHeads = 4, kBlocks = 32;
  std::vector<uint16_t> v(static_cast<size_t>(kBlocks * kBlock * kKvHeads * kHeadDim), fp32_to_fp16(0.5f));
  std::vector<float> p(kHeads * kBlock, 0.01f), out(kHeads * kHeadDim, 0.0f);
  const int64_t v_row = kKvHeads * kHeadDim;  // elements between positions
  for (auto _ : state) {
    for (int b = 0; b < kBlocks; ++b) {
      const uint16_t* v0 = v.data() + static_cast<size_t>(b) * kBlock * v_row;
      if (fused) {
        k.attn_pv_f16(p.data(), kBlock, kHeads, &v0, kBlock, v_row * 2, kBlock, out.data(), kHeadDim, kHeadDim,
                      nullptr);
      } else {
        for (int g = 0; g < kHeads; ++g) {
          for (int j = 0; j < kBlock; ++j) {
            k.axpy_f16(p[static_cast<size_t>(g * kBlock + j)], v0 + j * v_row, out.data() + g * kHeadDim, kHeadDim);
          }
        }
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(fused ? "attn_pv_f16" : "axpy_f16 loop");
}
BENCHMARK(BM_AttnPv)->Arg(0)->Arg(1)->ArgNames({"fused"})->Repetitions(3)->ReportAggregatesOnly(true);

// Attention's key scores for the same shape: dot_rows_f16 per head over key
// rows, four keys per call (fused:0), against one attn_qk_f16_kt call per
// block over the block's transposed keys, as KvBuffer stores them (fused:1).
void BM_AttnQk(benchmark::State& state) {
  const Kernels& k = bench_kernels();
  const bool fused = state.range(0) != 0;
  if (fused && k.attn_qk_f16_kt == nullptr) {
    state.SkipWithError("this table has no attn_qk_f16_kt");
    return;
  }
  constexpr int kHeads = 8, kBlock = 16, kHeadDim = 64, kKvHeads = 4, kBlocks = 32;
  std::vector<uint16_t> keys(static_cast<size_t>(kBlocks * kBlock * kKvHeads * kHeadDim), fp32_to_fp16(0.5f));
  std::vector<float> q(kHeads * kHeadDim, 0.01f), s(kHeads * kBlock, 0.0f);
  const int64_t k_row = kKvHeads * kHeadDim;  // elements between positions (rows), or one block's heads
  for (auto _ : state) {
    for (int b = 0; b < kBlocks; ++b) {
      const uint16_t* k0 = keys.data() + static_cast<size_t>(b) * kBlock * k_row;
      if (fused) {
        // q is uniform, so it is also the transposed [hd, heads] the kernel takes.
        k.attn_qk_f16_kt(q.data(), kHeads, k0, kBlock, kBlock, kHeadDim, s.data(), kBlock);
      } else {
        for (int g = 0; g < kHeads; ++g) {
          for (int j = 0; j < kBlock; j += kDotRows) {
            k.dot_rows_f16(k0 + j * k_row, k_row * 2, q.data() + g * kHeadDim, kHeadDim, s.data() + g * kBlock + j);
          }
        }
      }
      benchmark::DoNotOptimize(s.data());
    }
  }
  state.SetLabel(fused ? "attn_qk_f16_kt" : "dot_rows_f16 per head");
}
BENCHMARK(BM_AttnQk)->Arg(0)->Arg(1)->ArgNames({"fused"})->Repetitions(3)->ReportAggregatesOnly(true);

// Decode attention at a long context, the way a step runs it: one query
// token of one sequence with 4095 cached positions, every layer of the 1.1B
// shape (22 layers, 32 query heads, 4 KV heads, head_dim 64, f16 KV: 92 MB
// per step, far beyond L3), on 1 and 2 threads. kv:0 is an f16 cache,
// kv:1 int8 and kv:2 FP8 (with their f32 scales: 50 MB). "KV bytes" is the
// KV bytes read per second (e.g. 3.2G/s), to compare with BM_ReadBandwidth.
// layers:1 stores one layer (4 MB of f16, L3-resident) and reads it 22
// times: the compute ceiling.
void BM_PagedDecode(benchmark::State& state) {
  const Kernels& k = bench_kernels();
  const int layers = static_cast<int>(state.range(1));
  constexpr int kSteps = 22, kHeads = 32, kKvHeads = 4, kHeadDim = 64, kCtx = 4096;
  constexpr KvDtype kDtypes[] = {KvDtype::kF16, KvDtype::kInt8, KvDtype::kFp8};
  KvCacheSpec spec;
  spec.dtype = kDtypes[state.range(2)];
  spec.n_layers = layers;
  spec.n_kv_heads = kKvHeads;
  spec.head_dim = kHeadDim;
  spec.num_blocks = kCtx / spec.block_size + 1;
  auto kv = KvBuffer::create(spec);
  if (!kv.ok()) {
    state.SkipWithError("cannot allocate the KV cache");
    return;
  }
  BlockPool blocks(spec.num_blocks);
  BlockTable table(spec.block_size);
  if (!table.reserve(kCtx, blocks).ok()) {
    state.SkipWithError("cannot reserve the blocks");
    return;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> krow(kKvHeads * kHeadDim), vrow(krow.size());
  for (int layer = 0; layer < layers; ++layer) {
    for (int p = 0; p < kCtx; ++p) {
      for (size_t i = 0; i < krow.size(); ++i) {
        krow[i] = dist(rng);
        vrow[i] = dist(rng);
      }
      (*kv)->store(k, layer, table.slot(p), krow.data(), vrow.data());
    }
  }
  std::vector<float> q(kHeads * kHeadDim), out(q.size());
  for (auto& x : q) x = dist(rng);
  const int32_t position = kCtx - 1;
  const AttentionSeq seq{0, 1, table.blocks()};
  const AttentionShape shape{kHeads, kKvHeads, kHeadDim, 0.125f};
  ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (int layer = 0; layer < kSteps; ++layer) {
      paged_attention(pool, k, shape, q.data(), &position, std::span(&seq, 1), **kv, layer % layers, out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = 2.0 * kSteps * kCtx * kKvHeads * static_cast<double>(kv_head_bytes(spec.dtype, kHeadDim));
  state.counters["KV bytes"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
}
BENCHMARK(BM_PagedDecode)
    ->ArgsProduct({{1, 2}, {22, 1}, {0, 1, 2}})
    ->ArgNames({"threads", "layers", "kv"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ReadBandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  double bw = 0;
  for (auto _ : state) bw = measure_read_bandwidth(pool, size_t{512} << 20, 5);
  state.counters["GB/s"] = bw / 1e9;
}
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->ArgNames({"threads"})->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace tessera::cpu

BENCHMARK_MAIN();
