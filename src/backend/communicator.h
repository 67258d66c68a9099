// The communicator seam for running one model across ranks: tensor
// parallelism (Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053) sums the
// partial outputs of row-parallel projections with all_reduce and collects
// vocabulary shards with all_gather; pipeline parallelism (GPipe, Huang et al.
// 2019) sends activations between stages with send/recv; rank 0 broadcasts
// each step's batch. The semantics follow the MPI standard's collectives
// (MPI_Allreduce with MPI_SUM, MPI_Allgather, MPI_Bcast, MPI_Send/MPI_Recv).
//
// Buffers are device addresses of `backend` (backend/backend.h): an
// implementation over host MPI downloads/uploads through the backend, one over
// NCCL passes device pointers directly. Every call is collective over all
// ranks of the communicator unless it names a peer, and completes before it
// returns. Errors (a rank that died, a mismatched size) are returned, never
// hung on forever by contract of the implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tessera/status.h"

namespace tessera {

class Backend;

// A receive posted ahead of time (MPI_Irecv): the message may arrive while
// the caller does other work; wait() completes it.
class PendingRecv {
 public:
  virtual ~PendingRecv() = default;
  // Blocks until the message is in, then copies its bytes to `data` (device,
  // the size given to post_recv). Errors: the communicator's.
  virtual Status wait(void* data) = 0;
};

// What a communicator moved and how long its calls took (for `tessera bench`
// under mpirun: communication time and bytes per step).
struct CommStats {
  uint64_t calls = 0;  // collective and point-to-point calls
  uint64_t bytes = 0;  // payload bytes this rank contributed (sent or broadcast)
  double seconds = 0;  // wall time inside the calls
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data[n] = Σ over ranks of each rank's data[n] (f32), on every rank.
  virtual Status all_reduce_sum(Backend& backend, float* data, int64_t n) = 0;
  // recv[size() * n] = the ranks' send[n] in rank order, on every rank.
  virtual Status all_gather(Backend& backend, const float* send, int64_t n, float* recv) = 0;
  // data[bytes] of rank `root` copied to every rank. Host memory (step
  // metadata, not activations).
  virtual Status broadcast(void* host_data, size_t bytes, int root) = 0;
  // Point-to-point transfer of data[bytes] (device) to / from rank `peer`.
  virtual Status send(Backend& backend, const void* data, size_t bytes, int peer) = 0;
  virtual Status recv(Backend& backend, void* data, size_t bytes, int peer) = 0;
  // A receive of `bytes` from `peer`, posted now and completed later, so that
  // the peer's send can finish while this rank is blocked in another call
  // (rank 0 with pipeline steps in flight: docs/parallelism.md). Matches
  // sends from `peer` in posting order, like recv. The default posts
  // nothing and calls recv() in wait(). Borrows `backend`.
  virtual Result<std::unique_ptr<PendingRecv>> post_recv(Backend& backend, size_t bytes, int peer);
  // data[n] = the minimum over ranks of each rank's data[n], on every rank
  // (host; setup agreements such as the KV blocks every rank can hold).
  virtual Status all_reduce_min(int64_t* host_data, int64_t n) = 0;
  // Ranks with the same `color` form a new communicator, ordered by `key`
  // (MPI_Comm_split): the tensor-parallel group of one pipeline stage.
  virtual Result<std::unique_ptr<Communicator>> split(int color, int key) = 0;
  virtual CommStats stats() const { return {}; }
  // Whether the collectives behind all_reduce_sum / all_gather are posted as
  // non-blocking calls and polled (true) or made as blocking calls (false,
  // the default). Every rank of the communicator must set the same value
  // (MPI does not match a blocking collective with a non-blocking one): the
  // executor sets it from an all-reduce at session start, true when some
  // rank's threads outnumber its CPUs (core/cpu_share.h), whose waits must
  // then sleep between polls rather than spin inside MPI. Implementations
  // without such a choice ignore it.
  virtual void set_collectives_polled(bool polled) { (void)polled; }
};

// One rank: collectives are identities (all_gather copies send to recv when
// they differ), and send/recv have no peer to talk to (kInvalidArgument).
std::unique_ptr<Communicator> make_single_rank_communicator();

}  // namespace tessera
