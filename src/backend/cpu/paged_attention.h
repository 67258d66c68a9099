// Causal attention over a paged KV cache, computed tile by tile (one KV block
// per tile) with an online softmax: a running maximum m and running sum l per
// query row, rescaling the accumulator when m grows (FlashAttention, Dao et al.
// 2022, arXiv:2205.14135; PagedAttention, arXiv:2309.06180). The full
// [n_query, n_context] score matrix is never materialised.
#pragma once

#include <cstdint>
#include <span>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kv_buffer.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

// One sequence's rows in a ragged batch.
struct AttentionSeq {
  int32_t token_begin = 0;               // first row in the flat batch
  int32_t n_tokens = 0;                  // rows of this sequence in the batch
  std::span<const int32_t> block_table;  // the sequence's KV blocks, in position order
};

struct AttentionShape {
  int32_t n_heads = 0;     // query heads
  int32_t n_kv_heads = 0;  // key/value heads; n_heads % n_kv_heads == 0 (MHA, GQA, MQA)
  int32_t head_dim = 0;
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

// out[t] = softmax(q[t] · Kᵀ · scale) · V over cache positions 0..positions[t]
// of token t's sequence; keys and values of those positions (this step's
// included) must already be in `kv`. Every query row is computed
// independently, so results do not depend on batch composition.
//   q:         [n_tokens, n_heads, head_dim]
//   positions: [n_tokens]
//   out:       [n_tokens, n_heads, head_dim]
void paged_attention(ThreadPool& pool, const Kernels& k, const AttentionShape& shape, const float* q,
                     const int32_t* positions, std::span<const AttentionSeq> seqs, const KvBuffer& kv, int layer,
                     float* out);

}  // namespace tessera::cpu
