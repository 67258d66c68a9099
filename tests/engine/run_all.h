// Test helper: runs a set of requests at once through one EngineCore and
// returns each one's tokens (choice 0), checking that every request finished
// without error and every KV block was returned. Shared by the engine and
// parallel tests, which compare these tokens against single-request runs.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "engine/engine_core.h"

namespace tessera::testing {

struct EngineJob {
  std::vector<int32_t> prompt;
  GenerationOptions options;
};

// Creates an EngineCore from `cfg`, submits every job, steps until idle.
// `metrics`: the engine's metrics at the end, when not null.
inline std::vector<std::vector<int32_t>> run_all(const Model& m, const std::vector<EngineJob>& jobs,
                                                 const EngineConfig& cfg, EngineMetrics* metrics = nullptr) {
  auto engine = EngineCore::create(m, cfg);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return std::vector<std::vector<int32_t>>(jobs.size());
  std::vector<std::vector<int32_t>> out(jobs.size());
  std::map<uint64_t, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto id = (*engine)->submit(jobs[i].prompt, jobs[i].options, [&out, &index](const RequestEvent& ev) {
      if (ev.request_finished) {
        EXPECT_TRUE(ev.error.ok()) << ev.error.to_string();
        out[index.at(ev.request_id)] = (*ev.results)[0].tokens;
      }
    });
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    if (id.ok()) index[*id] = i;
  }
  (*engine)->run_until_idle();
  if (metrics) *metrics = (*engine)->metrics();
  EXPECT_EQ((*engine)->metrics().kv_blocks_used, 0);  // every block free or cached
  return out;
}

}  // namespace tessera::testing
