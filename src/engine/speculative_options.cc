#include "tessera/speculative_options.h"

namespace tessera {

Status SpeculativeOptions::validate() const {
  if (!method.empty() && method != "ngram" && method != "draft")
    return invalid_argument("--spec: unknown method '" + method + "' (expected ngram or draft)");
  if (method == "draft" && draft_model.empty()) return invalid_argument("--spec draft needs --draft-model PATH");
  if (method == "ngram" && !draft_model.empty())
    return invalid_argument("--draft-model cannot be combined with --spec ngram");
  if (draft_threads < 0) return invalid_argument("--draft-threads must be >= 0, got " + std::to_string(draft_threads));
  if (draft_kv_tokens < 0)
    return invalid_argument("--draft-kv-tokens must be >= 0, got " + std::to_string(draft_kv_tokens));
  if (draft_model.empty() && (draft_threads > 0 || draft_kv_tokens > 0))
    return invalid_argument("--draft-threads and --draft-kv-tokens need --draft-model PATH");
  if (k < 1 || k > 32) return invalid_argument("--spec-k must be in [1, 32], got " + std::to_string(k));
  if (ngram_min < 1 || ngram_max > 16 || ngram_min > ngram_max) {
    return invalid_argument("--spec-ngram-min/--spec-ngram-max must satisfy 1 <= min <= max <= 16, got " +
                            std::to_string(ngram_min) + " and " + std::to_string(ngram_max));
  }
  if (disable_batch_size < 1)
    return invalid_argument("--spec-disable-batch-size must be >= 1, got " + std::to_string(disable_batch_size));
  return {};
}

}  // namespace tessera
