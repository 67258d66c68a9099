// Causal attention over a paged KV cache, computed tile by tile (64
// positions, whole KV blocks, per tile) with an online softmax: a running
// maximum m and running sum l per query row, rescaling the accumulator when
// m grows (FlashAttention, Dao et al. 2022, arXiv:2205.14135;
// PagedAttention, arXiv:2309.06180). The full
// [n_query, n_context] score matrix is never materialised. A row longer than
// 1024 cached positions is cut into runs of 1024 (whole KV blocks), each its
// own work item for the thread pool, and the runs' (max, sum, output) merged
// in position order (Flash-Decoding, Dao et al. 2023): a decode step of one
// sequence otherwise has only n_kv_heads items to share among the threads.
#pragma once

#include <cstdint>
#include <span>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kv_buffer.h"
#include "backend/forward_batch.h"
#include "backend/op_params.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

using tessera::AttentionSeq;  // backend/forward_batch.h

using tessera::AttentionShape;  // backend/op_params.h

// out[t] = softmax(q[t] · Kᵀ · scale) · V over cache positions 0..positions[t]
// of token t's sequence; keys and values of those positions (this step's
// included) must already be in `kv`. Every query row is computed
// independently, and whether and where it is split depends only on its own
// position, so results do not depend on batch composition or thread count.
//   q:         [n_tokens, n_heads, head_dim]
//   positions: [n_tokens]
//   out:       [n_tokens, n_heads, head_dim]
void paged_attention(ThreadPool& pool, const Kernels& k, const AttentionShape& shape, const float* q,
                     const int32_t* positions, std::span<const AttentionSeq> seqs, const KvBuffer& kv, int layer,
                     float* out);

}  // namespace tessera::cpu
