// The public parallel-run entry points (tessera/parallel.h).
#include "tessera/parallel.h"

#include "dist/mpi_runtime.h"
#include "engine/model_executor.h"

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

void abort_parallel_run(int code) {
  dist::abort_all(code);
}

int parallel_rank() {
  return dist::initialized() ? dist::world().rank() : 0;
}

}  // namespace tessera
