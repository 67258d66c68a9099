#include "core/cpu_share.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace tessera {

namespace {

struct Sharing {
  std::mutex mu;
  int peer_ranks = 0;
  int cpus = 0;              // 0: affinity_cpu_count()
  std::map<int, int> pools;  // threads -> live pools of that size
  // cpus_oversubscribed() for the largest live pool, recomputed on each change.
  std::atomic<bool> oversubscribed{false};
};

Sharing& sharing() {
  static Sharing* s = new Sharing();  // never destroyed: pools may end during static destruction
  return *s;
}

// -1: no override; 0 / 1: TESSERA_CPU_SHARING.
int forced() {
  static const int value = [] {
    const char* v = std::getenv("TESSERA_CPU_SHARING");
    if (v == nullptr) return -1;
    if (std::strcmp(v, "1") == 0) return 1;
    if (std::strcmp(v, "0") == 0) return 0;
    return -1;  // any other value: detected, as without the variable
  }();
  return value;
}

bool decide(int threads, int peers, int cpus) {
  if (cpus <= 0) cpus = affinity_cpu_count();
  return static_cast<long>(std::max(1, threads)) * (1 + peers) > cpus;
}

void recompute_locked(Sharing& s) {
  const int largest = s.pools.empty() ? 1 : s.pools.rbegin()->first;
  s.oversubscribed.store(decide(largest, s.peer_ranks, s.cpus), std::memory_order_relaxed);
}

}  // namespace

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

void set_cpu_sharing(int peer_ranks, int cpus) {
  Sharing& s = sharing();
  std::lock_guard<std::mutex> lock(s.mu);
  s.peer_ranks = std::max(0, peer_ranks);
  s.cpus = std::max(0, cpus);
  recompute_locked(s);
}

void add_pool_threads(int threads) {
  Sharing& s = sharing();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.pools[threads];
  recompute_locked(s);
}

void remove_pool_threads(int threads) {
  Sharing& s = sharing();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pools.find(threads);
  if (it == s.pools.end()) return;
  if (--it->second == 0) s.pools.erase(it);
  recompute_locked(s);
}

bool cpus_oversubscribed() {
  if (const int f = forced(); f >= 0) return f == 1;
  return sharing().oversubscribed.load(std::memory_order_relaxed);
}

}  // namespace tessera
