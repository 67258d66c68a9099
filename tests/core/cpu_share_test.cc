#include "core/cpu_share.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/thread_pool.h"

namespace tessera {
namespace {

// These tests read the real affinity mask; TESSERA_CPU_SHARING would force
// every answer.
bool forced() {
  const char* v = std::getenv("TESSERA_CPU_SHARING");
  return v != nullptr && (std::string(v) == "0" || std::string(v) == "1");
}

// The rule, through live pools: (largest pool) × (1 + peers) > CPUs.
TEST(CpuShare, ThreadsTimesSharingRanksAgainstCpus) {
  if (forced()) GTEST_SKIP() << "TESSERA_CPU_SHARING is set";
  const int cpus = affinity_cpu_count();
  ASSERT_GE(cpus, 1);
  // Whether a pool of `threads` makes this process oversubscribed.
  auto with_pool = [](int threads) {
    ThreadPool pool(threads);
    return cpus_oversubscribed();
  };
  set_cpu_sharing(0, 0);                // one process on its affinity mask
  EXPECT_FALSE(cpus_oversubscribed());  // no pool: one thread
  EXPECT_FALSE(with_pool(cpus));
  EXPECT_TRUE(with_pool(cpus + 1));
  set_cpu_sharing(1, 2);  // two ranks on two CPUs
  EXPECT_FALSE(with_pool(1));
  EXPECT_TRUE(with_pool(2));
  set_cpu_sharing(3, 2);  // four ranks on two CPUs (mpirun --oversubscribe -np 4)
  EXPECT_TRUE(with_pool(1));
  set_cpu_sharing(1, 8);
  EXPECT_FALSE(with_pool(4));
  EXPECT_TRUE(with_pool(5));
  set_cpu_sharing(0, 0);
}

TEST(CpuShare, LivePoolsDecide) {
  if (forced()) GTEST_SKIP() << "TESSERA_CPU_SHARING is set";
  set_cpu_sharing(0, 0);
  const int cpus = affinity_cpu_count();
  EXPECT_FALSE(cpus_oversubscribed());
  {
    ThreadPool fits(cpus);
    EXPECT_FALSE(cpus_oversubscribed());
    {
      ThreadPool over(cpus + 1);
      EXPECT_TRUE(cpus_oversubscribed());
    }
    EXPECT_FALSE(cpus_oversubscribed());  // the largest live pool decides
    set_cpu_sharing(1, cpus);             // another rank on the same CPUs
    EXPECT_TRUE(cpus_oversubscribed());
    set_cpu_sharing(0, 0);
  }
  EXPECT_FALSE(cpus_oversubscribed());
}

// An oversubscribed pool (its waits yield and sleep instead of spinning)
// still runs every index once, region after region.
TEST(CpuShare, OversubscribedPoolCoversEveryIndex) {
  if (forced()) GTEST_SKIP() << "TESSERA_CPU_SHARING is set";
  set_cpu_sharing(0, 0);
  const int threads = 3 * affinity_cpu_count() + 1;
  ThreadPool pool(threads);
  ASSERT_TRUE(cpus_oversubscribed());
  std::vector<int> hits(997, 0);
  for (int rep = 0; rep < 300; ++rep) {
    pool.parallel_for(static_cast<int64_t>(hits.size()), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
    });
  }
  for (const int h : hits) EXPECT_EQ(h, 300);
}

}  // namespace
}  // namespace tessera
