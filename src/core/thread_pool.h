// A fixed pool of worker threads for data-parallel kernels. One pool serves
// the whole forward pass; each parallel_for is a fork-join barrier. Workers
// spin briefly before sleeping because a decode step issues hundreds of short
// parallel regions and a futex wake-up per region would cost more than the work.
// When threads outnumber the CPUs they may run on (core/cpu_share.h), waits
// yield the CPU at once and sleep sooner instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  // n_threads >= 1 threads in total, the calling thread included.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index, n_threads) once on every thread, including the
  // caller, and returns when all have finished. Not reentrant.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous chunks, at most one per thread, and calls
  // fn(begin, end) for each non-empty chunk.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace tessera
