// The distributed runtime tessera runs tensor and pipeline parallelism on:
// MPI (the MPI standard, version 3.1; Open MPI from Debian in practice). The
// world communicator spans every rank `mpirun -np N` started; rank 0 runs the
// engine (scheduler, KV manager, sampler, tokenizer, server), the others
// serve its steps (engine/model_executor.h).
//
// Built against MPI when CMake finds it (TESSERA_MPI); without it
// built_with_mpi() is false and init() fails with kUnimplemented.
// Threading: MPI is initialised with MPI_THREAD_SERIALIZED; tessera makes MPI
// calls from one thread at a time (the engine thread during steps, the main
// thread at start and exit).
#pragma once

#include "backend/communicator.h"
#include "tessera/status.h"

namespace tessera::dist {

// Whether this build has MPI.
bool built_with_mpi();
// Whether an MPI launcher started this process (Open MPI's OMPI_COMM_WORLD_SIZE,
// or PMI_SIZE / PMIX_RANK from other launchers), with the world size it gave
// (1 when not launched by one).
int launched_world_size();
// This process's rank as the launcher numbered it (0 when not launched by one).
int launched_rank();
// Initialises MPI once (later calls return the first result), and tells
// core/cpu_share.h how many ranks of this machine share this rank's CPUs
// (their machines' boot ids and affinity masks, exchanged over the world). Errors:
// kUnimplemented without MPI in the build, kInternal when MPI_Init fails or
// cannot give MPI_THREAD_SERIALIZED.
Status init();
bool initialized();
// The world communicator; requires initialized(). Owned by the runtime.
Communicator& world();
// Runs `fn` once at finalize(), before MPI_Finalize (rank 0's engine layer
// tells the workers to exit there). Only one hook; a second replaces it.
void set_finalize_hook(void (*fn)());
// Ends every rank of the run at once (MPI_Abort on the world; exits the
// process with `code` when MPI is not initialised). For a rank that cannot go
// on: its peers would otherwise wait for it in their next collective.
[[noreturn]] void abort_all(int code);
// Runs the hook, then MPI_Finalize. Idempotent; registered with atexit by init().
void finalize();

}  // namespace tessera::dist
