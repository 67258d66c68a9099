#include "backend/communicator.h"

#include <string>

#include "backend/backend.h"

namespace tessera {

namespace {

// post_recv's default: the receive happens in wait().
class DeferredRecv final : public PendingRecv {
 public:
  DeferredRecv(Communicator& comm, Backend& backend, size_t bytes, int peer)
      : comm_(comm), backend_(backend), bytes_(bytes), peer_(peer) {}
  Status wait(void* data) override { return comm_.recv(backend_, data, bytes_, peer_); }

 private:
  Communicator& comm_;
  Backend& backend_;
  size_t bytes_;
  int peer_;
};

class SingleRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status all_reduce_sum(Backend&, float*, int64_t) override { return {}; }
  Status all_gather(Backend& backend, const float* send, int64_t n, float* recv) override {
    if (send == recv || n <= 0) return {};
    // Device to device through the host: a single rank only gathers when a
    // caller asks for a copy, which the graph never does on the hot path.
    std::unique_ptr<float[]> host(new float[static_cast<size_t>(n)]);
    backend.download(host.get(), send, static_cast<size_t>(n) * sizeof(float));
    backend.upload(recv, host.get(), static_cast<size_t>(n) * sizeof(float));
    return {};
  }
  Status broadcast(void*, size_t, int root) override {
    if (root != 0) return invalid_argument("broadcast root " + std::to_string(root) + " is not a rank (1 rank)");
    return {};
  }
  Status send(Backend&, const void*, size_t, int peer) override {
    return invalid_argument("send to rank " + std::to_string(peer) + ": a single-rank run has no peers");
  }
  Status recv(Backend&, void*, size_t, int peer) override {
    return invalid_argument("recv from rank " + std::to_string(peer) + ": a single-rank run has no peers");
  }
  Status all_reduce_min(int64_t*, int64_t) override { return {}; }
  Result<std::unique_ptr<Communicator>> split(int, int) override { return make_single_rank_communicator(); }
};

}  // namespace

Result<std::unique_ptr<PendingRecv>> Communicator::post_recv(Backend& backend, size_t bytes, int peer) {
  return std::unique_ptr<PendingRecv>(new DeferredRecv(*this, backend, bytes, peer));
}

std::unique_ptr<Communicator> make_single_rank_communicator() {
  return std::make_unique<SingleRankCommunicator>();
}

}  // namespace tessera
