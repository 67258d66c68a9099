// Speculative decoding options of an engine (README "Speculative decoding";
// docs/architecture.md). The output distribution is the target model's for
// every sampling parameter; greedy and seeded requests give the same tokens
// with and without n-gram speculation.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/status.h"

namespace tessera {

struct SpeculativeOptions {
  std::string method;  // "" (off), "ngram" (prompt lookup) or "draft" (a draft model)
  // --draft-model: the draft model's GGUF file or HF directory (same
  // vocabulary as the target); set alone it implies method "draft".
  std::string draft_model;
  // --draft-kv-tokens: the draft's KV cache capacity in tokens; 0: the
  // target cache's capacity plus (k + one block) per sequence of --max-num-seqs.
  int64_t draft_kv_tokens = 0;
  // --draft-threads: the draft's backend threads; 0: the target's. The two
  // thread pools take turns and a pool's idle workers spin for a while, so
  // on few cores one draft thread can be faster (README, bench --spec draft).
  int32_t draft_threads = 0;
  int32_t k = 4;          // --spec-k: most tokens proposed per sequence and step
  int32_t ngram_min = 1;  // --spec-ngram-min: shortest suffix looked up
  int32_t ngram_max = 4;  // --spec-ngram-max: longest suffix looked up
  // --spec-disable-batch-size: no speculation in a step with more running
  // sequences. 4: at batch 8 speculation cost 4% (TinyLlama-shape Q4_0) to 40%
  // (stories260K) of decode tokens/s on the AVX2 CPU backend (README, bench --spec).
  int32_t disable_batch_size = 4;
  bool adaptive = true;  // per-sequence lookahead shrinks after rejections and grows after full acceptance
  // --no-spec-cost-aware turns it off: each step caps every sequence's
  // proposals at the number that maximises expected tokens per millisecond,
  // from the measured forward time per row count (and the draft's time per
  // drafted token) and each sequence's measured acceptance; 0 (no
  // speculation) when proposals would cost more than they save (SmartSpec,
  // arXiv:2406.14066; src/engine/spec_goodput.h).
  bool cost_aware = true;

  bool enabled() const { return !method.empty() || !draft_model.empty(); }
  // The method in effect: method, or "draft" when only draft_model is set.
  std::string effective_method() const { return method.empty() && !draft_model.empty() ? "draft" : method; }
  // kInvalidArgument naming the flag: an unknown method, k outside [1, 32],
  // n-gram sizes outside 1 <= min <= max <= 16, disable_batch_size < 1,
  // "draft" without a draft model or a draft model with another method,
  // draft_kv_tokens < 0, draft_threads < 0, draft_kv_tokens or
  // draft_threads set without a draft model.
  Status validate() const;
};

}  // namespace tessera
