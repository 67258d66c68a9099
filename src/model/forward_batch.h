// ForwardBatch: the input of one ragged forward step. Tokens of any number of
// sequences are flattened into [n_tokens]; prefill (many tokens of one
// sequence), decode (one token each of many) and mixtures are the same call.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/paged_attention.h"

namespace tessera {

struct ForwardBatch {
  std::vector<int32_t> token_ids;     // [n_tokens]
  std::vector<int32_t> positions;     // [n_tokens] position of each token in its sequence
  std::vector<int64_t> slot_mapping;  // [n_tokens] KV slot each token's K/V is written to
  // Each sequence's rows (contiguous, in position order) and block table; the
  // block table must cover every position up to the sequence's last token.
  std::vector<cpu::AttentionSeq> seqs;
  std::vector<int32_t> logits_rows;   // [n_logits] rows whose logits are returned, in this order

  int32_t n_tokens() const { return static_cast<int32_t>(token_ids.size()); }
};

}  // namespace tessera
