#include "core/thread_pool.h"

#include <algorithm>

#include "core/cpu_share.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera {

namespace {
constexpr int kSpinIterations = 200000;  // then sleep on the condition variable
constexpr int kYieldAfter = 2000;        // pause-spins before yielding the core
// When threads outnumber CPUs (core/cpu_share.h): a few yields, then the
// condition variable; no pause-spins, the thread waited for may need this
// CPU, and a worker woken from the condition variable preempts a thread that
// holds its CPU where a yielding one waits out that thread's time slice.
constexpr int kSharedYields = 64;

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  add_pool_threads(n_threads_);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  remove_pool_threads(n_threads_);
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_.store(n_threads_ - 1);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  fn(0, n_threads_);
  // Spin briefly, then yield: on an oversubscribed machine the worker we wait
  // for may need this core.
  const int pause_spins = cpus_oversubscribed() ? 0 : kYieldAfter;
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < pause_spins) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  run([&](int i, int nt) {
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t begin = std::min<int64_t>(n, chunk * i);
    const int64_t end = std::min<int64_t>(n, begin + chunk);
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    const bool shared = cpus_oversubscribed();
    const int spins = shared ? kSharedYields : kSpinIterations;
    const int pause_spins = shared ? 0 : kYieldAfter;
    for (int spin = 0; gen == seen && spin < spins; ++spin) {
      if (spin < pause_spins) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      gen = generation_.load();
    }
    seen = gen;
    if (stop_.load()) return;
    const std::function<void(int, int)>* job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job = job_;
    }
    (*job)(index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace tessera
