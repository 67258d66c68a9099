#include "engine/step_message.h"

namespace tessera {

std::vector<int64_t> encode_batch(const ForwardBatch& b) {
  size_t n_blocks = 0;
  for (const AttentionSeq& s : b.seqs) n_blocks += s.block_table.size();
  const size_t n = b.token_ids.size();
  std::vector<int64_t> w;
  w.reserve(4 + 3 * n + 3 * b.seqs.size() + n_blocks + b.logits_rows.size());
  w.push_back(static_cast<int64_t>(n));
  w.push_back(static_cast<int64_t>(b.seqs.size()));
  w.push_back(static_cast<int64_t>(b.logits_rows.size()));
  w.push_back(static_cast<int64_t>(n_blocks));
  w.insert(w.end(), b.token_ids.begin(), b.token_ids.end());
  w.insert(w.end(), b.positions.begin(), b.positions.end());
  w.insert(w.end(), b.slot_mapping.begin(), b.slot_mapping.end());
  for (const AttentionSeq& s : b.seqs) {
    w.push_back(s.token_begin);
    w.push_back(s.n_tokens);
    w.push_back(static_cast<int64_t>(s.block_table.size()));
  }
  for (const AttentionSeq& s : b.seqs) w.insert(w.end(), s.block_table.begin(), s.block_table.end());
  w.insert(w.end(), b.logits_rows.begin(), b.logits_rows.end());
  return w;
}

Status decode_batch(const std::vector<int64_t>& w, ReceivedBatch& out) {
  if (w.size() < 4) return internal_error("step message too short");
  const int64_t n = w[0], n_seqs = w[1], n_logits = w[2], n_blocks = w[3];
  if (n < 0 || n_seqs < 0 || n_logits < 0 || n_blocks < 0 ||
      static_cast<int64_t>(w.size()) != 4 + 3 * n + 3 * n_seqs + n_blocks + n_logits) {
    return internal_error("step message sizes do not add up");
  }
  ForwardBatch& b = out.batch;
  size_t at = 4;
  auto take32 = [&](std::vector<int32_t>& v, int64_t count) {
    v.resize(static_cast<size_t>(count));
    for (auto& x : v) x = static_cast<int32_t>(w[at++]);
  };
  take32(b.token_ids, n);
  take32(b.positions, n);
  b.slot_mapping.assign(w.begin() + static_cast<std::ptrdiff_t>(at),
                        w.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(n)));
  at += static_cast<size_t>(n);
  std::vector<int64_t> counts(static_cast<size_t>(n_seqs));
  b.seqs.resize(static_cast<size_t>(n_seqs));
  int64_t total = 0;
  for (size_t i = 0; i < b.seqs.size(); ++i) {
    b.seqs[i].token_begin = static_cast<int32_t>(w[at++]);
    b.seqs[i].n_tokens = static_cast<int32_t>(w[at++]);
    counts[i] = w[at++];
    if (counts[i] < 0) return internal_error("step message block table size is negative");
    total += counts[i];
  }
  if (total != n_blocks) return internal_error("step message block tables do not add up");
  take32(out.blocks, n_blocks);
  size_t off = 0;
  for (size_t i = 0; i < b.seqs.size(); ++i) {
    b.seqs[i].block_table = std::span<const int32_t>(out.blocks.data() + off, static_cast<size_t>(counts[i]));
    off += static_cast<size_t>(counts[i]);
  }
  take32(b.logits_rows, n_logits);
  return {};
}

}  // namespace tessera
