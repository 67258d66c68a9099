#include "model/shard.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/mapped_file.h"

namespace tessera {

namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

// Rows [begin, begin + rows) of m (a view; rows are contiguous).
WeightView rows_of(const WeightView& m, int64_t begin, int64_t rows) {
  const auto* base = static_cast<const uint8_t*>(m.data);
  const uint64_t row_bytes = dtype_row_bytes(m.dtype, m.cols);
  return {m.dtype, base == nullptr ? nullptr : base + static_cast<size_t>(begin) * row_bytes, rows, m.cols};
}

std::vector<float> slice(const std::vector<float>& v, int64_t begin, int64_t n) {
  if (v.empty()) return {};
  return {v.begin() + begin, v.begin() + begin + n};
}

}  // namespace

Result<std::vector<int>> stage_layers(int n_layers, const ParallelLayout& layout) {
  const int p = layout.pp_size;
  if (p < 1) return invalid_argument("--pipeline-parallel-size must be >= 1");
  if (p > n_layers) {
    return invalid_argument("--pipeline-parallel-size " + str(p) + " is more than the model's " + str(n_layers) +
                            " layers");
  }
  if (!layout.layer_split.empty()) {
    if (static_cast<int>(layout.layer_split.size()) != p) {
      return invalid_argument("--pp-layer-split gives " + str(static_cast<int64_t>(layout.layer_split.size())) +
                              " stages' layers; --pipeline-parallel-size is " + str(p));
    }
    int64_t sum = 0;
    for (int n : layout.layer_split) {
      if (n < 1) return invalid_argument("--pp-layer-split: every stage needs at least one layer");
      sum += n;
    }
    if (sum != n_layers) {
      return invalid_argument("--pp-layer-split sums to " + str(sum) + " layers; the model has " + str(n_layers));
    }
    return layout.layer_split;
  }
  std::vector<int> out(static_cast<size_t>(p), n_layers / p);
  for (int i = 0; i < n_layers % p; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

Result<ShardPlan> plan_shard(const ModelConfig& c, const ModelWeights& w, const ParallelLayout& layout, int rank) {
  const int t = layout.tp_size;
  if (t < 1) return invalid_argument("--tensor-parallel-size must be >= 1");
  if (rank < 0 || rank >= layout.world_size()) return invalid_argument("rank " + str(rank) + " is outside the layout");
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> stages, stage_layers(c.n_layers, layout));
  ShardPlan p;
  p.tp_size = t;
  p.pp_size = layout.pp_size;
  p.tp_rank = rank % t;
  p.stage = rank / t;
  for (int s = 0; s < p.stage; ++s) p.layer_begin += stages[static_cast<size_t>(s)];
  p.layer_end = p.layer_begin + stages[static_cast<size_t>(p.stage)];

  if (c.n_heads % t != 0) {
    return invalid_argument("--tensor-parallel-size " + str(t) + " does not divide the model's " + str(c.n_heads) +
                            " attention heads");
  }
  p.n_heads = c.n_heads / t;
  p.head_begin = p.tp_rank * p.n_heads;
  if (c.n_kv_heads % t == 0) {
    p.n_kv_heads = c.n_kv_heads / t;
    p.kv_head_begin = p.tp_rank * p.n_kv_heads;
  } else if (t % c.n_kv_heads == 0) {  // replicate KV heads: each rank's query heads share one
    p.n_kv_heads = 1;
    p.kv_head_begin = p.tp_rank / (t / c.n_kv_heads);
  } else {
    return invalid_argument("--tensor-parallel-size " + str(t) + " neither divides nor is a multiple of the model's " +
                            str(c.n_kv_heads) + " KV heads");
  }

  // FFN split on the block size of the down projections' types (their columns).
  int64_t align = 1;
  for (const LayerWeights& l : w.layers) align = std::max<int64_t>(align, dtype_block_elems(l.w_down.dtype));
  const int64_t blocks = (c.n_ff + align - 1) / align;
  const int64_t chunk = (blocks + t - 1) / t * align;
  p.ff_begin = std::min<int64_t>(c.n_ff, chunk * p.tp_rank);
  p.n_ff = std::min<int64_t>(chunk, c.n_ff - p.ff_begin);
  if (p.n_ff <= 0 || c.n_ff % align != 0) {
    return invalid_argument("the model's FFN size " + str(c.n_ff) + " does not split into " + str(t) +
                            " parts of whole " + str(align) + "-element blocks");
  }

  const int64_t vchunk = (c.n_vocab + t - 1) / t;
  p.vocab_stride = vchunk;
  p.vocab_begin = std::min<int64_t>(c.n_vocab, vchunk * p.tp_rank);
  p.n_vocab = std::min<int64_t>(vchunk, c.n_vocab - p.vocab_begin);
  if (p.n_vocab <= 0) return invalid_argument("the vocabulary is too small for --tensor-parallel-size " + str(t));
  return p;
}

uint64_t ShardedWeights::matrix_bytes() const {
  return weights.matrix_bytes();
}

Result<ShardedWeights> shard_weights(const ModelWeights& full, const ModelConfig& c, const ShardPlan& p, bool copy) {
  ShardedWeights out;
  ModelWeights& w = out.weights;
  w.token_embd = full.token_embd;
  w.output_norm = full.output_norm;
  w.output = rows_of(full.output, p.vocab_begin, p.n_vocab);
  // Only the first stage looks tokens up, only the last computes logits.
  if (!p.first_stage()) w.token_embd = {full.token_embd.dtype, nullptr, 0, full.token_embd.cols};
  if (!p.last_stage()) w.output = {full.output.dtype, nullptr, 0, full.output.cols};
  const int64_t hd = c.head_dim;
  // Columns [begin, begin + n) of m, copied (each row's blocks are contiguous).
  auto columns = [&](const WeightView& m, int64_t begin, int64_t n, const std::string& what) -> Result<WeightView> {
    if (begin == 0 && n == m.cols) return m;
    const int64_t blk = dtype_block_elems(m.dtype);
    if (begin % blk != 0 || n % blk != 0) {
      return invalid_argument(what + " (" + std::string(dtype_name(m.dtype)) + ", " + str(blk) +
                              "-element blocks) cannot be split at column " + str(begin) + " for " + str(p.tp_size) +
                              " tensor-parallel ranks");
    }
    WeightView v{m.dtype, nullptr, m.rows, n};
    if (!copy) return v;
    const uint64_t src_row = dtype_row_bytes(m.dtype, m.cols), dst_row = dtype_row_bytes(m.dtype, n);
    const uint64_t off = dtype_row_bytes(m.dtype, begin);
    std::vector<uint8_t>& buf = out.owned.emplace_back(static_cast<size_t>(dst_row * static_cast<uint64_t>(m.rows)));
    const auto* src = static_cast<const uint8_t*>(m.data);
    for (int64_t r = 0; r < m.rows; ++r) {
      std::memcpy(buf.data() + static_cast<size_t>(r) * dst_row, src + static_cast<size_t>(r) * src_row + off, dst_row);
    }
    // The copy replaces every row of the file's matrix on this rank: its
    // pages (all touched by the copy) need not stay resident.
    MappedFile::release_pages(m.data, static_cast<size_t>(m.bytes()));
    v.data = buf.data();
    return v;
  };
  for (int layer = p.layer_begin; layer < p.layer_end; ++layer) {
    const LayerWeights& f = full.layers[static_cast<size_t>(layer)];
    const std::string name = "layer " + std::to_string(layer);
    LayerWeights l;
    l.attn_norm = f.attn_norm;
    l.ffn_norm = f.ffn_norm;
    l.q_norm = f.q_norm;
    l.k_norm = f.k_norm;
    l.wq = rows_of(f.wq, p.head_begin * hd, p.n_heads * hd);
    l.wk = rows_of(f.wk, p.kv_head_begin * hd, p.n_kv_heads * hd);
    l.wv = rows_of(f.wv, p.kv_head_begin * hd, p.n_kv_heads * hd);
    l.bq = slice(f.bq, p.head_begin * hd, p.n_heads * hd);
    l.bk = slice(f.bk, p.kv_head_begin * hd, p.n_kv_heads * hd);
    l.bv = slice(f.bv, p.kv_head_begin * hd, p.n_kv_heads * hd);
    TESSERA_ASSIGN_OR_RETURN(l.wo, columns(f.wo, p.head_begin * hd, p.n_heads * hd, name + " attention output"));
    l.w_gate = rows_of(f.w_gate, p.ff_begin, p.n_ff);
    l.w_up = rows_of(f.w_up, p.ff_begin, p.n_ff);
    TESSERA_ASSIGN_OR_RETURN(l.w_down, columns(f.w_down, p.ff_begin, p.n_ff, name + " FFN down"));
    w.layers.push_back(std::move(l));
  }
  return out;
}

}  // namespace tessera
