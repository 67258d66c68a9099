#include "engine/generator.h"

#include <chrono>
#include <span>
#include <string>

#include "backend/registry.h"
#include "kv/block_table.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

Result<std::unique_ptr<Generator>> Generator::create(const Model& model, const BackendOptions& backend,
                                                     uint64_t kv_memory_bytes, int64_t ctx_tokens, KvDtype kv_dtype) {
  const ModelConfig& c = model.config();
  KvCacheSpec spec;
  spec.dtype = kv_dtype;
  spec.n_layers = c.n_layers;
  spec.n_kv_heads = c.n_kv_heads;
  spec.head_dim = c.head_dim;
  TESSERA_RETURN_IF_ERROR(size_kv_cache(spec, kv_memory_bytes, ctx_tokens));
  const int64_t context = kv_memory_bytes > 0 ? spec.capacity_tokens() : ctx_tokens;
  std::unique_ptr<Generator> g(new Generator(model, context));
  TESSERA_ASSIGN_OR_RETURN(g->backend_, create_backend(backend));
  g->comm_ = make_single_rank_communicator();
  TESSERA_ASSIGN_OR_RETURN(g->transformer_, Transformer::create(c, model.weights(), *g->backend_, *g->comm_));
  TESSERA_ASSIGN_OR_RETURN(g->kv_, g->backend_->create_kv_cache(spec));
  g->block_pool_ = BlockPool(spec.num_blocks);
  return g;
}

Result<std::vector<float>> Generator::prefill_logits(const std::vector<int32_t>& prompt, int32_t chunk) {
  if (prompt.empty()) return out_of_range("empty prompt");
  BlockTable table(kv_->spec().block_size);
  TESSERA_RETURN_IF_ERROR(table.reserve(static_cast<int64_t>(prompt.size()), block_pool_));
  std::vector<float> logits;
  Status st;
  for (int32_t begin = 0; begin < static_cast<int32_t>(prompt.size()) && st.ok(); begin += chunk) {
    const int32_t end = std::min<int32_t>(static_cast<int32_t>(prompt.size()), begin + chunk);
    ForwardBatch b;
    b.append(prompt, begin, end, table, ForwardBatch::Logits::kLast);
    st = transformer_->forward(b, *kv_, logits);
  }
  table.release_all(block_pool_);
  if (!st.ok()) return st;
  return logits;
}

Result<GenerationResult> Generator::generate(const std::vector<int32_t>& prompt, const GenerationOptions& options,
                                             const std::function<bool(const StreamEvent&)>& on_event) {
  const int32_t n_vocab = model_.config().n_vocab;
  TESSERA_RETURN_IF_ERROR(options.validate(n_vocab));
  if (!options.stop.empty() && !model_.has_tokenizer()) return invalid_argument("stop strings need a tokenizer");
  if (prompt.empty()) return out_of_range("the prompt is empty");
  const int64_t ctx = context_tokens();
  if (static_cast<int64_t>(prompt.size()) >= ctx) {
    return out_of_range("the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds " +
                        std::to_string(ctx) + " (raise --ctx-size or --kv-cache-memory)");
  }
  GenerationResult out;
  GenerationStats& stats = out.stats;
  stats.prompt_tokens = static_cast<int32_t>(prompt.size());
  const auto t0 = Clock::now();
  const int32_t bs = kv_->spec().block_size;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<BlockTable> tables;  // [n] KV blocks of each choice
  for (int32_t i = 0; i < options.n; ++i) {
    seqs.push_back(std::make_unique<Sequence>(model_, options, prompt, i, ctx));
    tables.emplace_back(bs);
  }
  auto release_all = [&] {
    for (auto& t : tables) t.release_all(block_pool_);
  };

  // Prefill once; the other choices fork the prompt's blocks.
  std::vector<float> logits;
  Status st = tables[0].reserve(stats.prompt_tokens, block_pool_);
  for (int32_t begin = 0; st.ok() && begin < stats.prompt_tokens; begin += options.prefill_chunk) {
    const int32_t end = std::min(stats.prompt_tokens, begin + options.prefill_chunk);
    ForwardBatch b;
    b.append(prompt, begin, end, tables[0], ForwardBatch::Logits::kLast);
    st = transformer_->forward(b, *kv_, logits);
  }
  for (int32_t i = 1; st.ok() && i < options.n; ++i) {
    int32_t from = -1, to = -1;
    auto forked = tables[0].fork(stats.prompt_tokens, block_pool_, &from, &to);
    if (!forked.ok()) {
      st = forked.status();
      break;
    }
    if (from >= 0) backend_->copy_kv_block(*kv_, from, to);
    tables[static_cast<size_t>(i)] = std::move(forked).value();
  }
  if (st.ok() && options.n > 1) logits.resize(static_cast<size_t>(n_vocab) * static_cast<size_t>(options.n));
  for (int32_t i = 1; st.ok() && i < options.n; ++i) {
    std::copy_n(logits.begin(), n_vocab, logits.begin() + static_cast<std::ptrdiff_t>(i) * n_vocab);
  }
  stats.prefill_ms = ms_since(t0);
  const auto t_decode = Clock::now();
  bool cancelled = false;
  while (st.ok() && !cancelled) {
    // Row r of `logits` belongs to the r-th live sequence.
    ForwardBatch b;
    size_t row = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      Sequence* s = seqs[i].get();
      if (s->finished()) continue;
      auto ev = s->on_logits(
          std::span<const float>(&logits[row++ * static_cast<size_t>(n_vocab)], static_cast<size_t>(n_vocab)));
      if (!ev.ok()) {
        st = ev.status();
        break;
      }
      if (stats.generated_tokens == 0) stats.ttft_ms = ms_since(t0);
      if (ev->token >= 0) ++stats.generated_tokens;
      if ((ev->token >= 0 || !ev->text.empty()) && !on_event(*ev)) cancelled = true;
      if (s->finished()) continue;
      const auto pos = static_cast<int32_t>(s->num_tokens() - 1);
      st = tables[i].reserve(pos + 1, block_pool_);
      if (!st.ok()) break;
      b.append(s->tokens(), pos, pos + 1, tables[i], ForwardBatch::Logits::kLast);
    }
    if (!st.ok() || cancelled || b.seqs.empty()) break;
    st = transformer_->forward(b, *kv_, logits);
    ++stats.decode_steps;
  }
  if (stats.decode_steps > 0) stats.decode_ms = ms_since(t_decode);
  release_all();
  if (!st.ok()) return st;
  for (auto& s : seqs) out.choices.push_back(std::move(s->result()));
  return out;
}

}  // namespace tessera
