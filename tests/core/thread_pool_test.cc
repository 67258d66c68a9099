#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tessera {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int rep = 0; rep < 50; ++rep) {
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
      }
      for (auto& h : hits) EXPECT_EQ(h.load(), 50);
    }
  }
}

TEST(ThreadPool, RunCallsEveryThreadIndex) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(4);
  pool.run([&](int i, int n) {
    EXPECT_EQ(n, 4);
    seen[static_cast<size_t>(i)]++;
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

// One pool per size while anyone holds it; a new one after the last holder
// lets go.
TEST(ThreadPool, SharedPoolsAreOnePerSize) {
  auto a = ThreadPool::shared(3);
  auto b = ThreadPool::shared(3);
  auto c = ThreadPool::shared(2);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(a->size(), 3);
  EXPECT_EQ(c->size(), 2);
  EXPECT_EQ(ThreadPool::shared(0)->size(), 1);
  a.reset();
  b.reset();
  EXPECT_EQ(ThreadPool::shared(3)->size(), 3);
}

// Two callers on one shared pool (a target and a draft backend) take turns:
// every region still covers every index exactly once.
TEST(ThreadPool, ConcurrentCallersTakeTurns) {
  auto pool = ThreadPool::shared(3);
  constexpr int64_t kN = 997;
  constexpr int kReps = 300;
  std::vector<std::atomic<int>> hits_a(kN), hits_b(kN);
  auto work = [&](std::vector<std::atomic<int>>& hits) {
    for (int rep = 0; rep < kReps; ++rep) {
      pool->parallel_for(kN, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
    }
  };
  std::thread other([&] { work(hits_b); });
  work(hits_a);
  other.join();
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_EQ(hits_a[static_cast<size_t>(i)].load(), kReps);
    EXPECT_EQ(hits_b[static_cast<size_t>(i)].load(), kReps);
  }
}

}  // namespace
}  // namespace tessera
