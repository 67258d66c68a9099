// Helpers for model tests: random-weight models written to temporary files;
// an engine on a CPU backend with logits of every prompt position and greedy
// continuations; a bare model graph for tests that build ForwardBatches by hand.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "backend/communicator.h"
#include "backend/registry.h"
#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/run_to_completion.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/transformer.h"
#include "test_support.h"

namespace tessera::testing {

// Writes a random model of `shape` to a temp file and loads it.
inline std::unique_ptr<Model> load_random_model(const RandomModelShape& shape, DType dtype, uint64_t seed) {
  ThreadPool pool(1);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tessera_test_" + shape.name + "_" + dtype_name(dtype) + "_" +
                                                 std::to_string(seed) + "_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  const Status st = write_random_model(shape, dtype, seed, pool, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto m = Model::load(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

// An engine for `model` on `backend`, its cache sized by kv_memory_bytes (if
// non-zero) or ctx_tokens, K/V stored as kv_dtype.
inline Result<std::unique_ptr<EngineCore>> make_engine(const Model& model, const BackendOptions& backend,
                                                       uint64_t kv_memory_bytes, int64_t ctx_tokens,
                                                       KvDtype kv_dtype = KvDtype::kF16) {
  EngineConfig cfg;
  cfg.threads = backend.threads;
  cfg.backend = backend;
  cfg.kv_cache_memory = kv_memory_bytes;
  cfg.ctx_size = ctx_tokens;
  cfg.kv_dtype = kv_dtype;
  return EngineCore::create(model, cfg);
}

// Logits of every position of `ids` ([ids.size(), n_vocab]), scored by the
// engine (prompt logits, nothing generated).
inline std::vector<float> all_logits(EngineCore& engine, const std::vector<int32_t>& ids) {
  GenerationOptions opts;
  opts.max_tokens = 0;
  opts.prompt_logits = true;
  std::vector<float> out;
  int32_t next = 0;
  Status error;
  auto id = engine.submit(ids, opts, [&](const RequestEvent& ev) {
    if (ev.prompt_logits != nullptr) {
      EXPECT_EQ(ev.prompt_logits_begin, next);
      out.insert(
          out.end(), ev.prompt_logits,
          ev.prompt_logits + static_cast<size_t>(ev.prompt_logits_rows) * static_cast<size_t>(engine.vocab_size()));
      next += ev.prompt_logits_rows;
    }
    if (ev.request_finished) error = ev.error;
  });
  EXPECT_TRUE(id.ok()) << id.status().to_string();
  engine.run_until_idle();
  EXPECT_TRUE(error.ok()) << error.to_string();
  EXPECT_EQ(next, static_cast<int32_t>(ids.size()));
  return out;
}

// Logits of the last position of `ids` ([n_vocab]).
inline std::vector<float> last_logits(EngineCore& engine, const std::vector<int32_t>& ids) {
  std::vector<float> all = all_logits(engine, ids);
  const auto nv = static_cast<size_t>(engine.vocab_size());
  if (all.size() < nv) return {};
  return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(nv), all.end());
}

// n greedy tokens after `prompt` (plain argmax: EOS does not stop).
inline std::vector<int32_t> greedy(EngineCore& engine, const std::vector<int32_t>& prompt, int n) {
  GenerationOptions opts;
  opts.max_tokens = n;
  opts.sampling.temperature = 0;
  opts.ignore_eos = true;
  auto r = run_to_completion(engine, prompt, opts);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() && !r->choices.empty() ? r->choices[0].tokens : std::vector<int32_t>{};
}

// The model graph on its own backend, KV cache and block pool, for tests
// that build ForwardBatches by hand (the engine builds them otherwise).
class GraphHarness {
 public:
  static Result<std::unique_ptr<GraphHarness>> create(const Model& m, const BackendOptions& backend, int64_t ctx_tokens,
                                                      KvDtype dtype = KvDtype::kF16) {
    std::unique_ptr<GraphHarness> h(new GraphHarness());
    KvCacheSpec spec;
    spec.dtype = dtype;
    spec.n_layers = m.config().n_layers;
    spec.n_kv_heads = m.config().n_kv_heads;
    spec.head_dim = m.config().head_dim;
    TESSERA_RETURN_IF_ERROR(size_kv_cache(spec, 0, ctx_tokens));
    TESSERA_ASSIGN_OR_RETURN(h->backend_, create_backend(backend));
    h->comm_ = make_single_rank_communicator();
    TESSERA_ASSIGN_OR_RETURN(h->transformer_, Transformer::create(m.config(), m.weights(), *h->backend_, *h->comm_));
    TESSERA_ASSIGN_OR_RETURN(h->kv_, h->backend_->create_kv_cache(spec));
    h->pool_ = BlockPool(spec.num_blocks);
    return h;
  }

  Transformer& transformer() { return *transformer_; }
  KvCache& kv() { return *kv_; }
  const KvCacheSpec& kv_spec() const { return kv_->spec(); }
  BlockPool& block_pool() { return pool_; }

  // Logits of the last token of `prompt` after prefilling it in chunks of
  // `chunk` tokens ([n_vocab]); the sequence's blocks are freed afterwards.
  Result<std::vector<float>> prefill_logits(const std::vector<int32_t>& prompt, int32_t chunk) {
    if (prompt.empty()) return out_of_range("empty prompt");
    BlockTable table(kv_spec().block_size);
    TESSERA_RETURN_IF_ERROR(table.reserve(static_cast<int64_t>(prompt.size()), pool_));
    std::vector<float> logits;
    Status st;
    for (int32_t begin = 0; begin < static_cast<int32_t>(prompt.size()) && st.ok(); begin += chunk) {
      const int32_t end = std::min<int32_t>(static_cast<int32_t>(prompt.size()), begin + chunk);
      ForwardBatch b;
      b.append(prompt, begin, end, table, ForwardBatch::Logits::kLast);
      st = transformer_->forward(b, *kv_, logits);
    }
    table.release_all(pool_);
    if (!st.ok()) return st;
    return logits;
  }

 private:
  GraphHarness() = default;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Transformer> transformer_;
  std::unique_ptr<KvCache> kv_;
  BlockPool pool_{0};
};

}  // namespace tessera::testing
