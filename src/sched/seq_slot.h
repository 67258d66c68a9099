// SeqSlot: the scheduler's view of one sequence — how many of its tokens are
// in the KV cache, its block table, and what orders it. The tokens themselves
// belong to the engine's Sequence; the slot borrows them.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_table.h"

namespace tessera {

enum class SeqStatus { kWaiting, kRunning, kFinished };

struct SeqSlot {
  SeqSlot(uint64_t id_, int32_t priority_, uint64_t arrival_, const std::vector<int32_t>* tokens_,
          int64_t max_total_tokens_, int32_t block_size)
      : id(id_),
        priority(priority_),
        arrival(arrival_),
        tokens(tokens_),
        max_total_tokens(max_total_tokens_),
        table(block_size) {}

  uint64_t id;
  int32_t priority;                    // lower runs first (as in vLLM); ties by arrival
  uint64_t arrival;                    // submission order
  const std::vector<int32_t>* tokens;  // prompt + generated so far (owned by the engine)
  int64_t max_total_tokens;            // prompt + the most it may generate (admission refuses what can never fit)
  BlockTable table;
  std::vector<uint64_t> block_hashes;  // prefix-cache hashes of its full blocks, in order
  int64_t num_computed = 0;            // tokens whose K/V are in the cache
  int64_t num_cached = 0;              // prompt tokens taken from the prefix cache at first admission
  int32_t num_preemptions = 0;
  int32_t num_spec = 0;  // proposed tokens (speculative decoding) to verify after its decode token, when it decodes
  bool ever_scheduled = false;
  bool use_prefix_cache = true;  // false: admission never takes cached blocks (prompt logits needed)
  // In a step issued but not yet completed (pipeline steps in flight): not
  // scheduled, preempted or freed until the step completes.
  bool in_flight = false;
  SeqStatus status = SeqStatus::kWaiting;

  int64_t num_tokens() const { return static_cast<int64_t>(tokens->size()); }
};

}  // namespace tessera
