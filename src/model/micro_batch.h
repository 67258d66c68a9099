// Micro-batches of one pipeline-parallel step (GPipe, Huang et al. 2019,
// arXiv:1811.06965). A step's ragged batch is cut into contiguous row ranges
// that every stage runs in order: stage s computes micro-batch i + 1 while
// stage s + 1 computes micro-batch i, so the stages of a long prefill (or a
// large decode batch) work at the same time instead of one after the other.
// A sequence may be cut across micro-batches: each stage runs them in order,
// so the KV entries of a sequence's earlier rows are written before its later
// rows attend to them, and every row is computed as it would be unsplit
// (the engine's batch-invariance rule), so the output does not change.
//
// Cutting pays only while a stage's step is compute-bound: a stage reads its
// weights once per micro-batch, so a small (bandwidth-bound) decode batch is
// not cut. The cut depends only on (rows, stages), so every rank computes the
// same ranges from the broadcast batch.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "backend/forward_batch.h"
#include "tessera/status.h"

namespace tessera {

// Fewest rows a micro-batch has (measured on the CPU backend: below about
// this many rows a matmul is bandwidth-bound; docs/parallelism.md).
// TESSERA_PP_MICRO_BATCH_ROWS overrides it (0: never cut), for measurement;
// every rank must see the same value (join_parallel_launch compares them).
int32_t micro_batch_min_rows();
// Checks TESSERA_PP_MICRO_BATCH_ROWS: unset, or an integer in [0, 2^20].
// Error (kInvalidArgument) naming the variable and its value otherwise.
Status check_micro_batch_env();

// Row ranges [begin, end) of the micro-batches of a step of `n_tokens` rows
// on `pp_size` stages: one range (no cut) for a single stage or a batch
// below 2 × min_rows; otherwise up to 4 × pp_size ranges of at least
// min_rows rows, the earlier ones no smaller than the later.
std::vector<std::pair<int32_t, int32_t>> micro_batch_ranges(int32_t n_tokens, int pp_size, int32_t min_rows);

// Rows [begin, end) of `b` as a batch of their own: the token ids,
// positions and slots of those rows, each sequence's rows inside the range
// (same block table, borrowed from b's), and the logits rows inside the range
// renumbered from `begin`. b.logits_rows must be ascending, so that the
// micro-batches' logits, concatenated in order, are b's.
ForwardBatch slice_batch(const ForwardBatch& b, int32_t begin, int32_t end);

}  // namespace tessera
