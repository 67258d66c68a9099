// Communicator (backend/communicator.h) over an MPI communicator, for CPU
// ranks. Device buffers are staged through host memory with the backend's
// download/upload (free for the CPU backend, whose device memory is host memory).
//
// all_reduce_sum is deterministic and identical on every rank: it gathers
// every rank's partial (MPI_Allgather) and sums them in rank order, so the
// residual stream of every rank holds the same bits and a row's result does
// not depend on the batch (MPI_Allreduce's reduction order may differ between
// ranks and message sizes). For T ranks it moves (T - 1) × n floats per rank,
// which for decode-sized messages (n_tokens × n_embd) is latency-bound anyway.
// broadcast waits by polling a non-blocking MPI_Ibcast with a sleep that
// grows to 1 ms, so an idle worker does not spin a core. While this rank's
// threads outnumber its CPUs (core/cpu_share.h: ranks sharing cores), every
// wait sleeps between polls and send becomes a polled MPI_Isend (MPI's
// blocking calls spin inside the library); the all-gather behind
// all_reduce_sum / all_gather becomes a polled MPI_Iallgather on every rank
// when set_collectives_polled(true) says some rank shares its CPUs.
#pragma once

#include <memory>

#include "backend/communicator.h"

namespace tessera::dist {

// A communicator over a duplicate of MPI_COMM_WORLD (requires MPI to be
// initialised: mpi_runtime.h). split() makes sub-communicators of it.
std::unique_ptr<Communicator> make_mpi_world_communicator();

}  // namespace tessera::dist
