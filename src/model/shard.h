// Sharding a model across ranks: tensor parallelism (Megatron-LM, Shoeybi et
// al. 2019, arXiv:1909.08053) and pipeline parallelism (GPipe, Huang et al.
// 2019). World rank = stage × tp_size + tp_rank: the tp_size ranks of one
// pipeline stage split every matrix of that stage's layers, the stages hold
// consecutive layers.
//
// Tensor-parallel split of one layer (rank r of T):
//   column-parallel (split by output rows): Q by query heads, K/V by KV heads
//     (replicated when T > n_kv_heads and T is a multiple of it, as vLLM
//     does: rank r then holds KV head r / (T / n_kv_heads)), gate/up by FFN rows;
//   row-parallel (split by input columns, partial sums all-reduced):
//     attention output by the same heads' columns, down by the same FFN columns;
//   output head: split by vocabulary rows (the logits are all-gathered);
//   token embedding, norms and QK-norm weights: replicated (the embedding is
//     looked up in the file's layout, so only the rows of seen tokens are read).
// Column splits fall on the block boundaries of each matrix's type (32 for
// Q8_0/Q4_0, 256 for K-quants); a shape that cannot split is an error.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"
#include "tessera/status.h"

namespace tessera {

// The parallel shape of a run (--tensor-parallel-size, --pipeline-parallel-size,
// --pp-layer-split).
struct ParallelLayout {
  int tp_size = 1;
  int pp_size = 1;
  // Layers of each stage, in order (pp_size entries summing to n_layers);
  // empty: as even as possible, earlier stages taking the remainder.
  std::vector<int> layer_split;
  int world_size() const { return tp_size * pp_size; }
};

// What one rank holds.
struct ShardPlan {
  int tp_rank = 0, tp_size = 1;
  int stage = 0, pp_size = 1;
  int layer_begin = 0, layer_end = 0;     // this stage's layers [begin, end)
  int head_begin = 0, n_heads = 0;        // query heads [begin, begin + n)
  int kv_head_begin = 0, n_kv_heads = 0;  // KV heads
  int64_t ff_begin = 0, n_ff = 0;         // FFN rows (gate/up) = down's columns
  int64_t vocab_begin = 0, n_vocab = 0;   // output-head rows
  int64_t vocab_stride = 0;               // rows of every rank's slot in the logits gather (max n_vocab)

  int world_rank() const { return stage * tp_size + tp_rank; }
  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == pp_size - 1; }
  int n_layers() const { return layer_end - layer_begin; }
};

// Layers per stage. Errors (kInvalidArgument): pp_size < 1 or above n_layers,
// a layer_split of the wrong length, with a stage of 0 layers, or not summing to n_layers.
Result<std::vector<int>> stage_layers(int n_layers, const ParallelLayout& layout);

// The plan of world rank `rank`. Errors (kInvalidArgument, naming the
// numbers): tp_size not dividing n_heads; n_kv_heads neither divisible by
// tp_size nor dividing it; an FFN or head split that does not fall on the
// block size of the matrices' types (checked by shard_weights).
Result<ShardPlan> plan_shard(const ModelConfig& config, const ModelWeights& weights, const ParallelLayout& layout,
                             int rank);

// One rank's weights: views into the model file for row splits, copies for
// column splits (owned here). token_embd is the whole table; output holds
// the plan's vocabulary rows; layers holds the stage's layers only.
struct ShardedWeights {
  ModelWeights weights;
  std::vector<std::vector<uint8_t>> owned;  // column-split copies the views in `weights` point into
  // Bytes of the matrices this rank multiplies per token (as ModelWeights::matrix_bytes).
  uint64_t matrix_bytes() const;
};

// Cuts `full` to `plan`. With copy = false no column split is copied (the
// views' data is null; for sizing, e.g. `tessera inspect --tensor-parallel-size`).
// Errors (kInvalidArgument): a column split that does not fall on a block
// boundary of the tensor's type, naming the tensor.
Result<ShardedWeights> shard_weights(const ModelWeights& full, const ModelConfig& config, const ShardPlan& plan,
                                     bool copy = true);

}  // namespace tessera
