#include "dist/mpi_communicator.h"

#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "core/cpu_share.h"

namespace tessera::dist {

namespace {

using Clock = std::chrono::steady_clock;

Status mpi_error(const char* what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return internal_error(std::string("MPI ") + what + " failed: " + std::string(text, static_cast<size_t>(len)));
}

// A stage waiting for the previous stage's activations inside a step spins
// this long before sleeping between polls (a sleep would add up to 1 ms per hop).
constexpr std::chrono::microseconds kStepSpin{100000};

// Waits for a non-blocking request, sleeping between polls once it has
// waited a while (an idle worker waiting for the next step). While threads
// outnumber CPUs (core/cpu_share.h), every poll sleeps (~50 µs, the kernel's
// default timer slack): the rank being waited for may need this CPU.
int wait_polling(MPI_Request* req, std::chrono::microseconds spin = std::chrono::microseconds(200)) {
  int done = 0;
  auto sleep = std::chrono::microseconds(0);
  const bool shared = cpus_oversubscribed();
  const auto start = Clock::now();
  for (;;) {
    const int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    if (Clock::now() - start > spin) {
      sleep = std::min(std::chrono::microseconds(1000), sleep + std::chrono::microseconds(20));
      std::this_thread::sleep_for(sleep);
    } else if (shared) {
      // A sleep, not a yield: a yield hands the CPU to whatever else runs
      // there for its whole time slice, while a thread waking from a sleep
      // preempts it (docs/parallelism.md, "Ranks sharing CPUs").
      std::this_thread::sleep_for(std::chrono::microseconds(1));
    }
  }
}

// A posted MPI_Irecv into its own host buffer; wait() polls it like recv.
class MpiPendingRecv final : public PendingRecv {
 public:
  // `stats`: the communicator's, which counts the wait (it outlives this).
  MpiPendingRecv(Backend& backend, size_t bytes, CommStats* stats) : backend_(backend), host_(bytes), stats_(stats) {}
  ~MpiPendingRecv() override {
    // Never left posted: MPI would write into freed memory.
    if (posted_) {
      MPI_Cancel(&req_);
      MPI_Wait(&req_, MPI_STATUS_IGNORE);
    }
  }
  int post(int peer, int tag, MPI_Comm comm) {
    const int rc = MPI_Irecv(host_.data(), static_cast<int>(host_.size()), MPI_BYTE, peer, tag, comm, &req_);
    posted_ = rc == MPI_SUCCESS;
    return rc;
  }
  Status wait(void* data) override;

 private:
  Backend& backend_;
  std::vector<uint8_t> host_;  // [bytes]
  CommStats* stats_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool posted_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status all_reduce_sum(Backend& backend, float* data, int64_t n) override {
    if (size_ == 1 || n <= 0) return {};
    const auto t0 = Clock::now();
    TESSERA_RETURN_IF_ERROR(gather_to_host(backend, data, n, "all-reduce (allgather)"));
    // Σ in rank order: the same bits on every rank.
    const auto count = static_cast<size_t>(n);
    for (size_t i = 0; i < count; ++i) mine_[i] = all_[i];
    for (int r = 1; r < size_; ++r) {
      const float* part = all_.data() + static_cast<size_t>(r) * count;
      for (size_t i = 0; i < count; ++i) mine_[i] += part[i];
    }
    backend.upload(data, mine_.data(), count * sizeof(float));
    account(count * sizeof(float), t0);
    return {};
  }

  Status all_gather(Backend& backend, const float* send, int64_t n, float* recv) override {
    const auto t0 = Clock::now();
    TESSERA_RETURN_IF_ERROR(gather_to_host(backend, send, n, "all-gather"));
    backend.upload(recv, all_.data(), all_.size() * sizeof(float));
    account(static_cast<size_t>(n) * sizeof(float), t0);
    return {};
  }

  Status broadcast(void* host_data, size_t bytes, int root) override {
    if (root < 0 || root >= size_) return invalid_argument("broadcast root " + std::to_string(root) + " is not a rank");
    const auto t0 = Clock::now();
    MPI_Request req;
    int rc = MPI_Ibcast(host_data, static_cast<int>(bytes), MPI_BYTE, root, comm_, &req);
    if (rc == MPI_SUCCESS) rc = wait_polling(&req);
    if (rc != MPI_SUCCESS) return mpi_error("broadcast", rc);
    account(rank_ == root ? bytes : 0, t0);
    return {};
  }

  Status send(Backend& backend, const void* data, size_t bytes, int peer) override {
    const auto t0 = Clock::now();
    bytes_.resize(bytes);
    backend.download(bytes_.data(), data, bytes);
    int rc = MPI_SUCCESS;
    if (cpus_oversubscribed()) {
      // MPI_Send would spin inside MPI until the receiver takes the message.
      MPI_Request req;
      rc = MPI_Isend(bytes_.data(), static_cast<int>(bytes), MPI_BYTE, peer, kTag, comm_, &req);
      if (rc == MPI_SUCCESS) rc = wait_polling(&req, kStepSpin);
    } else {
      rc = MPI_Send(bytes_.data(), static_cast<int>(bytes), MPI_BYTE, peer, kTag, comm_);
    }
    if (rc != MPI_SUCCESS) return mpi_error("send", rc);
    account(bytes, t0);
    return {};
  }

  Status recv(Backend& backend, void* data, size_t bytes, int peer) override {
    const auto t0 = Clock::now();
    bytes_.resize(bytes);
    MPI_Request req;
    int rc = MPI_Irecv(bytes_.data(), static_cast<int>(bytes), MPI_BYTE, peer, kTag, comm_, &req);
    if (rc == MPI_SUCCESS) rc = wait_polling(&req, kStepSpin);
    if (rc != MPI_SUCCESS) return mpi_error("recv", rc);
    backend.upload(data, bytes_.data(), bytes);
    account(0, t0);
    return {};
  }

  Result<std::unique_ptr<PendingRecv>> post_recv(Backend& backend, size_t bytes, int peer) override {
    auto pending = std::make_unique<MpiPendingRecv>(backend, bytes, &stats_);
    const int rc = pending->post(peer, kTag, comm_);
    if (rc != MPI_SUCCESS) return mpi_error("recv (posted)", rc);
    return std::unique_ptr<PendingRecv>(std::move(pending));
  }

  Status all_reduce_min(int64_t* host_data, int64_t n) override {
    const auto t0 = Clock::now();
    const int rc = MPI_Allreduce(MPI_IN_PLACE, host_data, static_cast<int>(n), MPI_INT64_T, MPI_MIN, comm_);
    if (rc != MPI_SUCCESS) return mpi_error("all-reduce (min)", rc);
    account(static_cast<size_t>(n) * sizeof(int64_t), t0);
    return {};
  }

  Result<std::unique_ptr<Communicator>> split(int color, int key) override {
    MPI_Comm sub;
    const int rc = MPI_Comm_split(comm_, color, key, &sub);
    if (rc != MPI_SUCCESS) return mpi_error("communicator split", rc);
    return std::unique_ptr<Communicator>(new MpiCommunicator(sub));
  }

  CommStats stats() const override { return stats_; }
  void set_collectives_polled(bool polled) override { polled_ = polled; }

 private:
  static constexpr int kTag = 17;
  // mine_[n] = this rank's send[n] (device), all_[size * n] = every rank's, in rank order.
  Status gather_to_host(Backend& backend, const float* send, int64_t n, const char* what) {
    const auto count = static_cast<size_t>(n);
    mine_.resize(count);
    all_.resize(count * static_cast<size_t>(size_));
    backend.download(mine_.data(), send, count * sizeof(float));
    int rc = MPI_SUCCESS;
    if (polled_) {
      // Some rank shares its CPUs: the blocking call would spin inside MPI
      // while the other ranks, on the same CPUs, still compute their part.
      // (Every rank takes the same branch: set_collectives_polled.)
      MPI_Request req;
      rc = MPI_Iallgather(mine_.data(), static_cast<int>(n), MPI_FLOAT, all_.data(), static_cast<int>(n), MPI_FLOAT,
                          comm_, &req);
      if (rc == MPI_SUCCESS) rc = wait_polling(&req, kStepSpin);
    } else {
      rc = MPI_Allgather(mine_.data(), static_cast<int>(n), MPI_FLOAT, all_.data(), static_cast<int>(n), MPI_FLOAT,
                         comm_);
    }
    return rc == MPI_SUCCESS ? Status() : mpi_error(what, rc);
  }
  void account(size_t bytes, Clock::time_point t0) {
    ++stats_.calls;
    stats_.bytes += bytes;
    stats_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  CommStats stats_;
  bool polled_ = false;            // set_collectives_polled
  std::vector<float> mine_, all_;  // host staging
  std::vector<uint8_t> bytes_;
};

Status MpiPendingRecv::wait(void* data) {
  const auto t0 = Clock::now();
  const int rc = wait_polling(&req_, kStepSpin);
  posted_ = false;
  ++stats_->calls;
  stats_->seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  if (rc != MPI_SUCCESS) return mpi_error("recv (posted)", rc);
  backend_.upload(data, host_.data(), host_.size());
  return {};
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_world_communicator() {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  return std::make_unique<MpiCommunicator>(dup);
}

}  // namespace tessera::dist
