// ForwardBatch: the input of one ragged forward step. Tokens of any number of
// sequences are flattened into [n_tokens]; prefill (many tokens of one
// sequence), decode (one token each of many) and mixtures are the same call.
// Host memory; a backend stages it on its device with Backend::set_batch.
#pragma once

#include <cstdint>
#include <vector>

#include <span>

#include "kv/block_table.h"

namespace tessera {

// One sequence's rows in a ragged batch.
struct AttentionSeq {
  int32_t token_begin = 0;               // first row in the flat batch
  int32_t n_tokens = 0;                  // rows of this sequence in the batch
  std::span<const int32_t> block_table;  // the sequence's KV blocks, in position order (borrowed)
};

struct ForwardBatch {
  std::vector<int32_t> token_ids;     // [n_tokens]
  std::vector<int32_t> positions;     // [n_tokens] position of each token in its sequence
  std::vector<int64_t> slot_mapping;  // [n_tokens] KV slot each token's K/V is written to
  // Each sequence's rows (contiguous, in position order) and block table; the
  // block table must cover every position up to the sequence's last token.
  std::vector<AttentionSeq> seqs;
  std::vector<int32_t> logits_rows;   // [n_logits] rows whose logits are returned, in this order

  int32_t n_tokens() const { return static_cast<int32_t>(token_ids.size()); }

  // Which of an appended sequence's rows need logits.
  enum class Logits { kNone, kLast, kAll };

  // Appends tokens[begin, end) of one sequence at positions begin..end-1,
  // with slots from `table` (which must cover position end - 1).
  void append(const std::vector<int32_t>& tokens, int64_t begin, int64_t end, const BlockTable& table, Logits logits) {
    const int32_t row0 = n_tokens();
    for (int64_t p = begin; p < end; ++p) {
      if (logits == Logits::kAll) logits_rows.push_back(n_tokens());
      token_ids.push_back(tokens[static_cast<size_t>(p)]);
      positions.push_back(static_cast<int32_t>(p));
      slot_mapping.push_back(table.slot(p));
    }
    seqs.push_back({row0, static_cast<int32_t>(end - begin), std::span<const int32_t>(table.blocks())});
    if (logits == Logits::kLast) logits_rows.push_back(n_tokens() - 1);
  }
};

}  // namespace tessera
