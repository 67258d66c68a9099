// Helpers for model tests: random-weight models written to temporary files,
// logits of every prompt position, greedy continuations.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

#include "core/thread_pool.h"
#include "engine/generator.h"
#include "kv/block_table.h"
#include "model/model.h"
#include "model/random_model.h"

namespace tessera::testing {

// Writes a random model of `shape` to a temp file and loads it.
inline std::unique_ptr<Model> load_random_model(const RandomModelShape& shape, DType dtype, uint64_t seed) {
  ThreadPool pool(1);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tessera_test_" + shape.name + "_" + dtype_name(dtype) + "_" + std::to_string(seed) + "_" +
                             std::to_string(::getpid()) + ".gguf"))
                               .string();
  const Status st = write_random_model(shape, dtype, seed, pool, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto m = Model::load(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Logits of every position of `ids` after one prefill: [ids.size(), n_vocab].
inline std::vector<float> all_logits(Generator& gen, const std::vector<int32_t>& ids) {
  BlockTable table(gen.kv_spec().block_size);
  EXPECT_TRUE(table.reserve(static_cast<int64_t>(ids.size()), gen.block_pool()).ok());
  ForwardBatch b;
  b.append(ids, 0, static_cast<int64_t>(ids.size()), table, ForwardBatch::Logits::kAll);
  std::vector<float> logits;
  const Status st = gen.transformer().forward(b, gen.kv(), logits);
  EXPECT_TRUE(st.ok()) << st.to_string();
  table.release_all(gen.block_pool());
  return logits;
}

// n greedy tokens after `prompt` (plain argmax: EOS does not stop).
inline std::vector<int32_t> greedy(Generator& gen, const std::vector<int32_t>& prompt, int n) {
  GenerationOptions opts;
  opts.max_tokens = n;
  opts.sampling.temperature = 0;
  opts.ignore_eos = true;
  auto r = gen.generate(prompt, opts, [](const StreamEvent&) { return true; });
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->choices[0].tokens : std::vector<int32_t>{};
}

}  // namespace tessera::testing
