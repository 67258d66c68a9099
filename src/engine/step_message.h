// What rank 0 sends every other rank per step of a parallel run: a fixed
// header (the command and the sizes) and, for a step, its ForwardBatch
// flattened into int64 words — token ids, positions, slot mapping, each
// sequence's rows and block table, the logits rows. Nothing else crosses
// ranks per step except the tensor-parallel all-reduces and all-gathers and
// the pipeline stages' activations (model/transformer.h).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/forward_batch.h"
#include "tessera/status.h"

namespace tessera {

enum class StepCommand : int64_t {
  kStep = 1,          // run the batch in the payload
  kStartSession = 2,  // payload: the session's configuration (JSON text)
  kEndSession = 3,    // rank 0's engine was destroyed; wait for the next session
  kExit = 4,          // rank 0 is exiting: finalize and exit
};

struct StepHeader {
  int64_t command = 0;        // StepCommand
  int64_t payload_words = 0;  // int64 words (kStep) or bytes (kStartSession) that follow
};

// A ForwardBatch decoded on a worker, owning the block tables its spans view.
struct ReceivedBatch {
  ForwardBatch batch;
  std::vector<int32_t> blocks;  // every sequence's block table, concatenated
};

// Flattens `b` into words: [n_tokens, n_seqs, n_logits, n_block_entries,
// token_ids..., positions..., slots..., per sequence (token_begin, n_tokens,
// n_blocks)..., blocks..., logits_rows...].
std::vector<int64_t> encode_batch(const ForwardBatch& b);
// The inverse. Errors (kInternal): words that do not describe a batch
// (a protocol error between ranks of different builds).
Status decode_batch(const std::vector<int64_t>& words, ReceivedBatch& out);

}  // namespace tessera
