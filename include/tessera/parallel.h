// Running one model across processes and machines (docs/parallelism.md):
// tensor parallelism (Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053)
// and pipeline parallelism (GPipe, Huang et al. 2019) over MPI. Start every
// rank with the same command under `mpirun -np T*P`; every rank calls
// init_parallel, then rank 0 creates Engines (EngineOptions::parallel) as a
// single-process program would, while every other rank calls
// run_parallel_worker, which serves rank 0's engines until rank 0 exits.
#pragma once

#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera {

// The parallel shape of an Engine (EngineOptions::parallel).
struct ParallelOptions {
  int tensor_parallel_size = 1;    // ranks splitting every weight matrix of a stage
  int pipeline_parallel_size = 1;  // stages of consecutive layers
  // Layers per stage (pipeline_parallel_size entries summing to the model's
  // layers); empty: as even as possible.
  std::vector<int> pp_layer_split;
  int world_size() const { return tensor_parallel_size * pipeline_parallel_size; }
};

// Whether this build has MPI (tessera --version lists "mpi").
bool parallel_available();
// The number of ranks the MPI launcher started this process among (1 when
// not started by one): Open MPI's OMPI_COMM_WORLD_SIZE, or PMI_SIZE.
int launched_ranks();
// This process's rank as the launcher numbered it (OMPI_COMM_WORLD_RANK or
// PMI_RANK; 0 when not started by one), known before init_parallel.
int launched_rank();
// Initialises MPI for `world_size` ranks; once per process, on every rank,
// before the first Engine. Errors: a build without MPI (kUnimplemented), a
// launch with another number of ranks (kInvalidArgument, naming both).
Status init_parallel(int world_size);
// Joins the launch: under an MPI launcher with more than one rank
// (launched_ranks() > 1), initialises MPI on every rank whatever its flags and
// checks that every rank was given the same `layout` (sizes and
// pp_layer_split), so that a rank started without the parallel flags (an MPMD
// launch) is an error on every rank instead of one rank waiting for it. With
// a layout of one rank on every rank, each rank then runs on its own. Without
// a launcher, or in a build without MPI, does nothing. Errors
// (kInvalidArgument): ranks with different layouts (naming the sizes seen), a
// launch with another number of ranks than layout.world_size(); MPI failing to
// start (kInternal).
Status join_parallel_launch(const ParallelOptions& layout);
// This process's rank (0 before init_parallel).
int parallel_rank();
// On ranks other than 0: loads `model_path` (empty: the path rank 0 sends)
// for each of rank 0's engines, runs its share of every step, and returns
// when rank 0 exits. Errors: this rank's failure during a step, a protocol
// error; a failure while loading or sharding is reported by rank 0 instead
// (as "rank N: ...") and the worker waits for the next engine.
Status run_parallel_worker(const std::string& model_path = "");
// Ends every rank of the parallel run at once with exit status `code`
// (MPI_Abort): for a rank that cannot go on, whose peers would otherwise wait
// for it. Without a parallel run, exits this process.
[[noreturn]] void abort_parallel_run(int code);

}  // namespace tessera
