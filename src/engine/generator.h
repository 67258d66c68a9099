// Generator: drives one request at a time through the model — prefill the
// prompt (in chunks), then decode — over a paged KV cache. With n > 1 the
// completions share the prompt's KV blocks (forked, copy-on-write for the
// last partial block) and decode together in one ragged batch per step. The
// serving engine (continuous batching) replaces this driver later; the
// forward pass it calls already takes ragged multi-sequence batches.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "backend/communicator.h"
#include "engine/generation_options.h"
#include "engine/sequence.h"
#include "kv/block_pool.h"
#include "kv/kv_cache_spec.h"
#include "model/model.h"
#include "model/transformer.h"
#include "sample/logprobs.h"
#include "tessera/status.h"

namespace tessera {

struct GenerationStats {
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;  // all choices
  int32_t decode_steps = 0;      // forward passes after the prompt
  double ttft_ms = 0;            // submit -> first generated token
  double prefill_ms = 0;         // all prompt forward passes
  double decode_ms = 0;          // forward passes after the prompt
};

struct GenerationResult {
  std::vector<ChoiceResult> choices;
  GenerationStats stats;
};

class Generator {
 public:
  // Sizes the KV cache from kv_memory_bytes (if non-zero) or ctx_tokens,
  // storing K/V as kv_dtype, on the backend `backend` names (registry).
  // Borrows model. Errors: those of create_backend and Transformer::create,
  // KV cache allocation.
  static Result<std::unique_ptr<Generator>> create(const Model& model, const BackendOptions& backend,
                                                   uint64_t kv_memory_bytes, int64_t ctx_tokens,
                                                   KvDtype kv_dtype = KvDtype::kF16);

  const KvCacheSpec& kv_spec() const { return kv_->spec(); }
  // Tokens one sequence can hold (prompt plus generated): ctx_tokens when
  // the cache was sized by context, else the whole cache.
  int64_t context_tokens() const { return context_tokens_; }

  // Generates after `prompt` (token ids, BOS included if wanted). on_event is
  // called for every generated token and may return false to cancel. Errors:
  // an empty prompt or one that leaves no room (kOutOfRange), invalid options
  // (kInvalidArgument), out of KV blocks (kResourceExhausted), NaN logits.
  Result<GenerationResult> generate(const std::vector<int32_t>& prompt, const GenerationOptions& options,
                                    const std::function<bool(const StreamEvent&)>& on_event);

  // Logits of the last prompt token after prefilling `prompt` in chunks of
  // `chunk` tokens ([n_vocab]); the sequence is released afterwards. For tests.
  Result<std::vector<float>> prefill_logits(const std::vector<int32_t>& prompt, int32_t chunk);

  Transformer& transformer() { return *transformer_; }
  KvCache& kv() { return *kv_; }
  Backend& backend() { return *backend_; }
  BlockPool& block_pool() { return block_pool_; }

 private:
  Generator(const Model& model, int64_t context_tokens) : model_(model), context_tokens_(context_tokens) {}

  const Model& model_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<KvCache> kv_;
  BlockPool block_pool_{0};
  std::unique_ptr<Transformer> transformer_;
  int64_t context_tokens_;
};

}  // namespace tessera
