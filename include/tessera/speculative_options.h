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
  std::string method;               // "" (off) or "ngram" (prompt lookup)
  int32_t k = 4;                    // --spec-k: most tokens proposed per sequence and step
  int32_t ngram_min = 1;            // --spec-ngram-min: shortest suffix looked up
  int32_t ngram_max = 4;            // --spec-ngram-max: longest suffix looked up
  // --spec-disable-batch-size: no speculation in a step with more running
  // sequences. 4: at batch 8 speculation cost 4% (TinyLlama-shape Q4_0) to 40%
  // (stories260K) of decode tokens/s on the AVX2 CPU backend (README, bench --spec).
  int32_t disable_batch_size = 4;
  bool adaptive = true;             // per-sequence lookahead shrinks after rejections and grows after full acceptance

  bool enabled() const { return !method.empty(); }
  // kInvalidArgument naming the flag: an unknown method, k outside [1, 32],
  // n-gram sizes outside 1 <= min <= max <= 16, disable_batch_size < 1.
  Status validate() const;
};

}  // namespace tessera
