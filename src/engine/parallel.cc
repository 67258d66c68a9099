// The public parallel-run entry points (tessera/parallel.h).
#include "tessera/parallel.h"

#include <cstdint>
#include <string>

#include "dist/mpi_runtime.h"
#include "engine/model_executor.h"
#include "model/micro_batch.h"

namespace tessera {

bool parallel_available() {
  return dist::built_with_mpi();
}

int launched_ranks() {
  return dist::launched_world_size();
}

int launched_rank() {
  return dist::launched_rank();
}

Status init_parallel(int world_size) {
  return init_parallel_runtime(world_size);
}

Status join_parallel_launch(const ParallelOptions& layout) {
  if (launched_ranks() <= 1 || !dist::built_with_mpi()) return {};
  TESSERA_RETURN_IF_ERROR(dist::init());
  // FNV-1a over the layer split: equal splits give equal words.
  uint64_t split = 1469598103934665603ull;
  for (const int layers : layout.pp_layer_split) split = (split ^ static_cast<uint32_t>(layers)) * 1099511628211ull;
  const auto split_word = static_cast<int64_t>(split >> 1);
  // The minimum of v and of -v: every rank agrees when min == -min(-v).
  // A bad TESSERA_PP_MICRO_BATCH_ROWS is -1 (micro_batch.h).
  const int64_t rows = check_micro_batch_env().ok() ? int64_t{micro_batch_min_rows()} : -1;
  int64_t words[8] = {layout.tensor_parallel_size,
                      -int64_t{layout.tensor_parallel_size},
                      layout.pipeline_parallel_size,
                      -int64_t{layout.pipeline_parallel_size},
                      split_word,
                      -split_word,
                      rows,
                      -rows};
  TESSERA_RETURN_IF_ERROR(dist::world().all_reduce_min(words, 8));
  if (words[0] != -words[1] || words[2] != -words[3] || words[4] != -words[5]) {
    return invalid_argument("the ranks were started with different parallel flags (--tensor-parallel-size " +
                            std::to_string(words[0]) + ".." + std::to_string(-words[1]) +
                            ", --pipeline-parallel-size " + std::to_string(words[2]) + ".." +
                            std::to_string(-words[3]) + ", or another --pp-layer-split): give every rank the same");
  }
  if (words[6] < 0) {
    if (Status st = check_micro_batch_env(); !st.ok()) return st;
    return invalid_argument("TESSERA_PP_MICRO_BATCH_ROWS is not a valid number on another rank");
  }
  if (words[6] != -words[7]) {
    return invalid_argument("the ranks see different TESSERA_PP_MICRO_BATCH_ROWS (" + std::to_string(words[6]) + ".." +
                            std::to_string(-words[7]) + "): give every rank the same (mpirun -x)");
  }
  if (layout.world_size() == 1) return {};
  return init_parallel_runtime(layout.world_size());
}

void abort_parallel_run(int code) {
  dist::abort_all(code);
}

int parallel_rank() {
  return dist::initialized() ? dist::world().rank() : 0;
}

}  // namespace tessera
