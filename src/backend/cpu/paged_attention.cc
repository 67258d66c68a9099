#include "backend/cpu/paged_attention.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/fp8.h"

namespace tessera::cpu {

namespace {

// Work item: one query token, one KV head (all query heads of its group) and
// the cached positions [begin, end) it covers: the whole context, or for a
// row longer than kSplitPositions one split of it, whose unnormalised
// output and softmax state go to partial slot `partial` (-1: none).
struct Item {
  int32_t token;
  int32_t kv_head;
  const AttentionSeq* seq;
  int32_t begin;
  int32_t end;
  int32_t partial;
};

// A row's context is cut into runs of this many positions (rounded down to
// whole KV blocks) when it is longer: each run is its
// own work item and the runs' softmax states are merged afterwards
// (Flash-Decoding, Dao et al. 2023). A decode step of one sequence has only
// n_kv_heads items otherwise, too few to spread evenly over the threads at a
// long context. The cut depends only on the row's own position, never on
// the batch or the thread count, so results stay batch-invariant; rows of
// at most this many positions are computed exactly as without splitting.
constexpr int32_t kSplitPositions = 1024;

// q · k for one head's key of the cache's dtype: an f32 row, or (every
// other dtype: keys transposed within their block, kv_buffer.h) the key's
// elements `stride` elements apart, an 8-bit key's scale `scale`.
float dot_key(const Kernels& k, KvDtype t, const uint8_t* key, int64_t stride, float scale, const float* q, int64_t n) {
  switch (t) {
    case KvDtype::kF16:
    case KvDtype::kBF16: {
      const auto* e = reinterpret_cast<const uint16_t*>(key);
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        sum += q[i] * (t == KvDtype::kF16 ? fp16_to_fp32(e[i * stride]) : bf16_to_fp32(e[i * stride]));
      }
      return sum;
    }
    case KvDtype::kF32:
      return k.dot_f32(reinterpret_cast<const float*>(key), q, n);
    case KvDtype::kInt8: {
      const auto* v = reinterpret_cast<const int8_t*>(key);
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += q[i] * static_cast<float>(v[i * stride]);
      return sum * scale;
    }
    case KvDtype::kFp8: {
      const float* fp8 = fp8_e4m3_table();
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += q[i] * fp8[key[i * stride]];
      return sum * scale;
    }
  }
  return 0.0f;
}

// out += p * value for one head's value row of the cache's dtype.
void add_value(const Kernels& k, KvDtype t, float p, const uint8_t* value, float* out, int64_t n) {
  switch (t) {
    case KvDtype::kF16:
      k.axpy_f16(p, reinterpret_cast<const uint16_t*>(value), out, n);
      return;
    case KvDtype::kBF16: {
      const auto* v = reinterpret_cast<const uint16_t*>(value);
      for (int64_t i = 0; i < n; ++i) out[i] += p * bf16_to_fp32(v[i]);
      return;
    }
    case KvDtype::kF32: {
      const auto* v = reinterpret_cast<const float*>(value);
      for (int64_t i = 0; i < n; ++i) out[i] += p * v[i];
      return;
    }
    case KvDtype::kInt8: {
      float scale;
      std::memcpy(&scale, value + n, sizeof(scale));
      const float ps = p * scale;
      const auto* v = reinterpret_cast<const int8_t*>(value);
      for (int64_t i = 0; i < n; ++i) out[i] += ps * static_cast<float>(v[i]);
      return;
    }
    case KvDtype::kFp8: {
      float scale;
      std::memcpy(&scale, value + n, sizeof(scale));
      const float ps = p * scale;
      const float* fp8 = fp8_e4m3_table();
      for (int64_t i = 0; i < n; ++i) out[i] += ps * fp8[value[i]];
      return;
    }
  }
}

// Blocks ahead of the one being scored whose key and value rows of this head
// are prefetched: a KV block is a separate allocation (its block table entry),
// so the hardware prefetcher loses the stream at every block boundary; at a
// long context decode waited on DRAM for every block's first rows.
constexpr int32_t kPrefetchBlocks = 2;
// Only for sequences with at most this many query rows in the step (decode,
// speculative verification): a prefill chunk's rows re-read the same blocks,
// which are in cache after the first row, and prefetching them cost prefill
// 4096 ~7%.
constexpr int32_t kPrefetchMaxRows = 8;

// Asks for the cache lines of `rows` head rows of `bytes` each, `stride`
// bytes apart, from `p` (a hint: no effect on results), into L2
// (prefetcht2): a block's 64 lines ahead as prefetcht0 held the L1's miss
// buffers, and the demand loads waited behind them (Zen 4, BM_PagedDecode
// one thread, 22 layers: 25-28 ms with prefetcht0, 15-18 into L2, 28-39
// without prefetching).
void prefetch_rows(const uint8_t* p, int32_t rows, int64_t stride, int64_t bytes) {
  for (int32_t j = 0; j < rows; ++j) {
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + j * stride + b, 0, 1);
  }
}

// Positions per online-softmax tile: whole KV blocks, at least one. One
// tile's scores, softmax step and P·V (its accumulators in registers across
// the tile's blocks) cover this many positions, so the accumulators' loads,
// rescales and stores and the softmax's reductions are paid once per tile
// instead of once per 16-position block.
constexpr int32_t kTilePositions = 64;

// Attention of one item over cached positions [begin, end): out[group, hd]
// normalised when `m_out` is null; otherwise out holds the unnormalised sum
// of p * v and m_out / l_out [group] the running max and sum, for
// merge_partials. Tiles start at `begin` (a block boundary) and hold
// kTilePositions / block_size blocks, so a row's tiles depend only on its
// position.
void attend_one(const Kernels& k, const AttentionShape& sh, const float* q, int32_t begin, int32_t end,
                const AttentionSeq& seq, const KvBuffer& kv, int layer, int32_t kv_head, float* out, float* m_out,
                float* l_out, std::vector<float>& scratch, std::vector<uint16_t>& rows16) {
  const int32_t group = sh.n_heads / sh.n_kv_heads;
  const int32_t hd = sh.head_dim;
  const int32_t bs = kv.spec().block_size;
  const int32_t tile_blocks = std::max<int32_t>(1, kTilePositions / bs);
  const int32_t tn = tile_blocks * bs;  // positions per tile
  scratch.assign(static_cast<size_t>(group) * (3 + 2 * tn + hd) + tn, 0.0f);
  float* m = scratch.data();                                       // [group] running max
  float* l = m + group;                                            // [group] running sum
  float* corr = l + group;                                         // [group] this tile's rescale factor
  float* s = corr + group;                                         // [group, tn] scores of one tile
  float* q_scaled = s + static_cast<int64_t>(group) * tn;          // [hd, group] q * scale (attn_qk_*_kt)
  float* p_scaled = q_scaled + static_cast<int64_t>(group) * hd;   // [group, tn] p * value scale (8-bit KV)
  float* row_scale = p_scaled + static_cast<int64_t>(group) * tn;  // [tn] 8-bit rows' scales
  std::fill(m, m + group, -std::numeric_limits<float>::infinity());
  std::fill(out, out + static_cast<int64_t>(group) * hd, 0.0f);
  const int32_t n_ctx = end;
  const KvDtype t = kv.spec().dtype;
  const auto head_off = static_cast<int64_t>(static_cast<uint64_t>(kv_head) * kv_head_bytes(t, hd));
  // Bytes between consecutive slots' rows (all heads of one token).
  const auto row_bytes = static_cast<int64_t>(static_cast<uint64_t>(kv.spec().n_kv_heads) * kv_head_bytes(t, hd));
  // The grouped P·V kernels for the rows' type: f16 / bf16 rows; int8 rows
  // read in place (attn_pv_i8); FP8 rows converted to f16 per tile first
  // (kv_fp8_to_f16, exact) for attn_pv_f16. 8-bit rows' scales (FP8's times
  // 256) are folded into p.
  const bool bf16_rows = t == KvDtype::kBF16;
  const bool fp8_rows = t == KvDtype::kFp8 && k.attn_pv_f16 != nullptr;
  const auto attn_pv = bf16_rows ? k.attn_pv_bf16 : t == KvDtype::kF16 || fp8_rows ? k.attn_pv_f16 : nullptr;
  const auto attn_pv8 = t == KvDtype::kInt8 ? k.attn_pv_i8 : nullptr;
  if (fp8_rows) rows16.resize(static_cast<size_t>(tn) * hd);
  // Keys lie transposed within their block (kv_buffer.h; all but f32):
  // every head's scores of a block from one attn_qk_*_kt call.
  const bool keys_t = kv.keys_in_lanes();
  const bool eight_bit = t == KvDtype::kInt8 || t == KvDtype::kFp8;
  const auto attn_qk_kt = !keys_t || eight_bit ? nullptr : bf16_rows ? k.attn_qk_bf16_kt : k.attn_qk_f16_kt;
  const auto attn_qk_kt8 = !eight_bit ? nullptr : t == KvDtype::kInt8 ? k.attn_qk_i8_kt : k.attn_qk_fp8_kt;
  const bool group_pv = attn_pv != nullptr || attn_pv8 != nullptr;
  if (attn_qk_kt != nullptr || attn_qk_kt8 != nullptr) {
    // Scores come out scaled (softmax scale folded into q once per item),
    // the group's queries transposed as the kernels take them ([hd, group]).
    for (int32_t g = 0; g < group; ++g) {
      for (int32_t d = 0; d < hd; ++d) q_scaled[d * group + g] = q[g * hd + d] * sh.scale;
    }
  }
  const auto head_bytes = static_cast<int64_t>(kv_head_bytes(t, hd));
  // An 8-bit block's keys of this head: [hd, bs] values, then [bs] scales.
  const int64_t key_values = static_cast<int64_t>(hd) * bs;
  const bool prefetch = seq.n_tokens <= kPrefetchMaxRows;
  // Slot of each of the tile's blocks' first position, and the first value
  // row of this head in each (attn_pv's blocks).
  std::array<int64_t, kTilePositions> slot0{};             // [tile_blocks]
  std::array<const uint16_t*, kTilePositions> v_blocks{};  // [tile_blocks]
  std::array<const uint8_t*, kTilePositions> v_blocks8{};  // [tile_blocks] (8-bit rows)
  auto block_slot = [&](int32_t pos) {
    return static_cast<int64_t>(seq.block_table[static_cast<size_t>(pos / bs)]) * bs;
  };
  for (int32_t start = begin; start < n_ctx; start += tn) {
    const int32_t n = std::min(tn, n_ctx - start);
    const int32_t nb = (n + bs - 1) / bs;
    for (int32_t b = 0; b < nb; ++b) slot0[static_cast<size_t>(b)] = block_slot(start + b * bs);
    for (int32_t b = 0; b < nb; ++b) {
      const int64_t sl = slot0[static_cast<size_t>(b)];
      const int32_t nj = std::min(bs, n - b * bs);  // this block's positions
      float* sb = s + b * bs;                       // its scores, row stride tn
      if (const int32_t ahead = start + (b + kPrefetchBlocks) * bs; prefetch && ahead < n_ctx) {
        const int64_t slot = block_slot(ahead);
        const int32_t rows = std::min(bs, n_ctx - ahead);
        if (keys_t) {  // this head's keys of the block, contiguous
          prefetch_rows(kv.k_block(layer, slot / bs, kv_head), 1, 0, bs * head_bytes);
        } else {
          prefetch_rows(static_cast<const uint8_t*>(kv.k(layer, slot)) + head_off, rows, row_bytes, head_bytes);
        }
        prefetch_rows(static_cast<const uint8_t*>(kv.v(layer, slot)) + head_off, rows, row_bytes, head_bytes);
      }
      const uint8_t* kb = keys_t ? kv.k_block(layer, sl / bs, kv_head) : nullptr;
      if (attn_qk_kt != nullptr) {
        // Every head of the group at once, element d of 16 keys one vector.
        const auto* kt = reinterpret_cast<const uint16_t*>(kb);
        for (int32_t j0 = 0; j0 < nj; j0 += kAttnKeys) {
          attn_qk_kt(q_scaled, group, kt + j0, bs, std::min(kAttnKeys, nj - j0), hd, sb + j0, tn);
        }
      } else if (attn_qk_kt8 != nullptr) {
        const auto* scales = reinterpret_cast<const float*>(kb + key_values);
        for (int32_t j0 = 0; j0 < nj; j0 += kAttnKeys) {
          attn_qk_kt8(q_scaled, group, kb + j0, bs, scales + j0, std::min(kAttnKeys, nj - j0), hd, sb + j0, tn);
        }
      } else {
        const int64_t elem = eight_bit ? 1 : 2;  // bytes per transposed element
        for (int32_t g = 0; g < group; ++g) {
          const float* qg = q + static_cast<int64_t>(g) * hd;
          float* sg = sb + static_cast<int64_t>(g) * tn;
          for (int32_t j = 0; j < nj; ++j) {
            float scale = 1.0f;
            if (eight_bit)
              std::memcpy(&scale, kb + key_values + j * static_cast<int64_t>(sizeof(float)), sizeof(float));
            const uint8_t* key = keys_t ? kb + j * elem : static_cast<const uint8_t*>(kv.k(layer, sl + j)) + head_off;
            sg[j] = dot_key(k, t, key, keys_t ? bs : 1, scale, qg, hd);
          }
          for (int32_t j = 0; j < nj; ++j) sg[j] *= sh.scale;
        }
      }
    }
    // Every head of the group: p = exp(s - m'), m, l updated, corr = the
    // factor that brings the accumulator to the new maximum.
    k.softmax_tile(s, tn, group, n, m, l, corr);
    if (!group_pv) {
      for (int32_t g = 0; g < group; ++g) {
        float* og = out + static_cast<int64_t>(g) * hd;
        if (corr[g] != 1.0f) k.scale(og, corr[g], hd);
        const float* sg = s + static_cast<int64_t>(g) * tn;
        for (int32_t j = 0; j < n; ++j) {
          const int64_t sl = slot0[static_cast<size_t>(j / bs)] + j % bs;
          add_value(k, t, sg[j], static_cast<const uint8_t*>(kv.v(layer, sl)) + head_off, og, hd);
        }
      }
    } else if (attn_pv8 == nullptr && !fp8_rows) {
      // Every head of the group at once: the same FMAs per head as the
      // add_value loop above, each value row converted once, and each head's
      // accumulator rescaled by corr as it is loaded (the same product as
      // scale).
      for (int32_t b = 0; b < nb; ++b) {
        v_blocks[static_cast<size_t>(b)] = reinterpret_cast<const uint16_t*>(
            static_cast<const uint8_t*>(kv.v(layer, slot0[static_cast<size_t>(b)])) + head_off);
      }
      attn_pv(s, tn, group, v_blocks.data(), bs, row_bytes, n, out, hd, hd, corr);
    } else {
      // out += (p * scale_j * unit) * (value_j / unit): add_value's products.
      for (int32_t b = 0; b < nb; ++b) {
        v_blocks8[static_cast<size_t>(b)] =
            static_cast<const uint8_t*>(kv.v(layer, slot0[static_cast<size_t>(b)])) + head_off;
      }
      if (fp8_rows) {
        for (int32_t b = 0; b < nb; ++b) {
          k.kv_fp8_to_f16(v_blocks8[static_cast<size_t>(b)], row_bytes, std::min(bs, n - b * bs), hd,
                          rows16.data() + static_cast<int64_t>(b) * bs * hd, row_scale + b * bs);
        }
      } else {
        for (int32_t j = 0; j < n; ++j) {  // each int8 row's scale follows its hd values
          std::memcpy(&row_scale[j], v_blocks8[static_cast<size_t>(j / bs)] + (j % bs) * row_bytes + hd, sizeof(float));
        }
      }
      for (int32_t g = 0; g < group; ++g) {
        for (int32_t j = 0; j < n; ++j) p_scaled[g * tn + j] = s[g * tn + j] * row_scale[j];
      }
      if (fp8_rows) {
        const uint16_t* rows = rows16.data();
        attn_pv(p_scaled, tn, group, &rows, tn, hd * static_cast<int64_t>(sizeof(uint16_t)), n, out, hd, hd, corr);
      } else {
        attn_pv8(p_scaled, tn, group, v_blocks8.data(), bs, row_bytes, n, out, hd, hd, corr);
      }
    }
  }
  if (m_out != nullptr) {
    std::copy(m, m + group, m_out);
    std::copy(l, l + group, l_out);
    return;
  }
  for (int32_t g = 0; g < group; ++g) k.scale(out + static_cast<int64_t>(g) * hd, 1.0f / l[g], hd);
}

// out[group, hd] from the splits of one row and KV head, in position order:
// m = max_c m_c, l = sum_c l_c e^(m_c - m), out = sum_c e^(m_c - m) o_c / l.
//   o: [splits, group, hd];  m, l: [splits, group]
void merge_partials(int splits, int32_t group, int32_t hd, const float* o, const float* m, const float* l, float* out) {
  for (int32_t g = 0; g < group; ++g) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < splits; ++c) mx = std::max(mx, m[c * group + g]);
    float* og = out + static_cast<int64_t>(g) * hd;
    std::fill(og, og + hd, 0.0f);
    float sum = 0.0f;
    for (int c = 0; c < splits; ++c) {
      const float mc = m[c * group + g];
      if (mc == -std::numeric_limits<float>::infinity()) continue;  // nothing seen in this split
      const float w = std::exp(mc - mx);
      sum += l[c * group + g] * w;
      const float* oc = o + (static_cast<int64_t>(c) * group + g) * hd;
      for (int32_t i = 0; i < hd; ++i) og[i] += w * oc[i];
    }
    const float inv = 1.0f / sum;
    for (int32_t i = 0; i < hd; ++i) og[i] *= inv;
  }
}

}  // namespace

void paged_attention(ThreadPool& pool, const Kernels& k, const AttentionShape& shape, const float* q,
                     const int32_t* positions, std::span<const AttentionSeq> seqs, const KvBuffer& kv, int layer,
                     float* out) {
  const int32_t group = shape.n_heads / shape.n_kv_heads;
  const int64_t row = static_cast<int64_t>(shape.n_heads) * shape.head_dim;
  const int64_t part = static_cast<int64_t>(group) * shape.head_dim;  // one item's output
  std::vector<Item> items;
  // Rows split into several runs: (token, kv_head, first partial slot, runs).
  struct Split {
    int32_t token, kv_head, first, runs;
  };
  std::vector<Split> splits;
  int32_t partials = 0;
  // Runs start on block boundaries.
  const int32_t bs = kv.spec().block_size;
  const int32_t split = std::max<int32_t>(1, kSplitPositions / bs) * bs;
  for (const AttentionSeq& seq : seqs) {
    for (int32_t t = seq.token_begin; t < seq.token_begin + seq.n_tokens; ++t) {
      const int32_t n_ctx = positions[t] + 1;
      const int32_t runs = (n_ctx + split - 1) / split;
      for (int32_t h = 0; h < shape.n_kv_heads; ++h) {
        if (runs <= 1) {
          items.push_back({t, h, &seq, 0, n_ctx, -1});
          continue;
        }
        splits.push_back({t, h, partials, runs});
        for (int32_t c = 0; c < runs; ++c) {
          items.push_back({t, h, &seq, c * split, std::min(n_ctx, (c + 1) * split), partials++});
        }
      }
    }
  }
  // The runs' results, [partials, group, hd] then [partials, group] max and
  // sum, each written whole by attend_one before merge_partials reads it.
  // One buffer per calling thread, kept between calls: a prefill chunk at a
  // long context has megabytes of them, and steps without long rows
  // allocate nothing.
  thread_local std::vector<float> partial_buf;
  const auto n_partial = static_cast<size_t>(partials);
  if (partial_buf.size() < n_partial * static_cast<size_t>(part + 2 * group)) {
    partial_buf.resize(n_partial * static_cast<size_t>(part + 2 * group));
  }
  float* const part_o = partial_buf.data();
  float* const part_m = part_o + n_partial * static_cast<size_t>(part);
  float* const part_l = part_m + n_partial * static_cast<size_t>(group);
  // Items handed out by an atomic counter, last token first: a prefill's
  // later tokens attend to more positions (causal), so equal static shares
  // would leave the thread with the early tokens waiting, and the longest
  // items first leave the short ones to even out the end. Which thread runs
  // an item does not change its bits.
  std::atomic<size_t> next{0};
  pool.run([&](int, int) {
    std::vector<float> scratch;
    std::vector<uint16_t> rows16;  // FP8 value rows as f16, one tile
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < items.size();
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      const Item& it = items[items.size() - 1 - i];
      const int64_t off = it.token * row + static_cast<int64_t>(it.kv_head) * part;
      // A whole row writes its normalised output; a run its partial slot.
      const auto pi = static_cast<size_t>(std::max(it.partial, 0));
      const bool whole = it.partial < 0;
      attend_one(k, shape, q + off, it.begin, it.end, *it.seq, kv, layer, it.kv_head,
                 whole ? out + off : part_o + pi * static_cast<size_t>(part),
                 whole ? nullptr : part_m + pi * static_cast<size_t>(group),
                 whole ? nullptr : part_l + pi * static_cast<size_t>(group), scratch, rows16);
    }
  });
  for (const Split& sp : splits) {
    const auto first = static_cast<size_t>(sp.first);
    merge_partials(sp.runs, group, shape.head_dim, part_o + first * static_cast<size_t>(part),
                   part_m + first * static_cast<size_t>(group), part_l + first * static_cast<size_t>(group),
                   out + sp.token * row + static_cast<int64_t>(sp.kv_head) * part);
  }
}

}  // namespace tessera::cpu
