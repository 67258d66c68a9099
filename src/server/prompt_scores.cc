#include "server/prompt_scores.h"

#include "tessera/logprobs.h"

namespace tessera::server {

void score_prompt_rows(const float* logits, int32_t begin, int32_t rows, int32_t n_vocab,
                       std::span<const int32_t> prompt, int top_n, std::vector<PromptTokenScore>& out) {
  for (int32_t r = 0; r < rows; ++r) {
    const int64_t next = static_cast<int64_t>(begin) + r + 1;
    if (next >= static_cast<int64_t>(prompt.size())) break;
    const std::span<const float> row(logits + static_cast<size_t>(r) * static_cast<size_t>(n_vocab),
                                     static_cast<size_t>(n_vocab));
    const int32_t token = prompt[static_cast<size_t>(next)];
    PromptTokenScore s;
    s.lp = compute_logprobs(row, token, top_n);
    const float chosen = row[static_cast<size_t>(token)];
    for (float v : row) s.rank += v > chosen;
    out.push_back(std::move(s));
  }
}

}  // namespace tessera::server
