#include "engine/generator.h"

#include <chrono>
#include <span>
#include <string>

#include "kv/block_table.h"
#include "sample/sampler.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A batch of tokens [begin, end) of one sequence whose earlier positions are
// already cached. Logits are requested for the last token only.
ForwardBatch single_sequence_batch(const std::vector<int32_t>& tokens, int32_t begin, int32_t end,
                                   const BlockTable& table) {
  ForwardBatch b;
  for (int32_t p = begin; p < end; ++p) {
    b.token_ids.push_back(tokens[static_cast<size_t>(p)]);
    b.positions.push_back(p);
    b.slot_mapping.push_back(table.slot(p));
  }
  b.seqs.push_back({0, end - begin, std::span<const int32_t>(table.blocks())});
  b.logits_rows.push_back(end - begin - 1);
  return b;
}

}  // namespace

Result<std::unique_ptr<Generator>> Generator::create(const Model& model, ThreadPool& pool, const cpu::Kernels& kernels,
                                                     uint64_t kv_memory_bytes, int64_t ctx_tokens) {
  const ModelConfig& c = model.config();
  KvCacheSpec spec;
  spec.n_layers = c.n_layers;
  spec.n_kv_heads = c.n_kv_heads;
  spec.head_dim = c.head_dim;
  TESSERA_RETURN_IF_ERROR(size_kv_cache(spec, kv_memory_bytes, ctx_tokens));
  TESSERA_ASSIGN_OR_RETURN(auto kv, cpu::KvBuffer::create(spec));
  const int64_t context = kv_memory_bytes > 0 ? spec.capacity_tokens() : ctx_tokens;
  return std::unique_ptr<Generator>(new Generator(model, pool, kernels, std::move(kv), context));
}

Generator::Generator(const Model& model, ThreadPool& pool, const cpu::Kernels& kernels, std::unique_ptr<cpu::KvBuffer> kv,
                     int64_t context_tokens)
    : model_(model),
      kv_(std::move(kv)),
      block_pool_(kv_->spec().num_blocks),
      transformer_(model.config(), model.weights(), pool, kernels),
      context_tokens_(context_tokens) {}

Result<std::vector<float>> Generator::prefill_logits(const std::vector<int32_t>& prompt, int32_t chunk) {
  if (prompt.empty()) return out_of_range("empty prompt");
  BlockTable table(kv_->spec().block_size);
  TESSERA_RETURN_IF_ERROR(table.reserve(static_cast<int64_t>(prompt.size()), block_pool_));
  std::vector<float> logits;
  Status st;
  for (int32_t begin = 0; begin < static_cast<int32_t>(prompt.size()) && st.ok(); begin += chunk) {
    const int32_t end = std::min<int32_t>(static_cast<int32_t>(prompt.size()), begin + chunk);
    st = transformer_.forward(single_sequence_batch(prompt, begin, end, table), *kv_, logits);
  }
  table.release_all(block_pool_);
  if (!st.ok()) return st;
  return logits;
}

Result<GenerationStats> Generator::generate(const std::vector<int32_t>& prompt, const GenerationOptions& options,
                                            const std::function<bool(int32_t)>& on_token) {
  TESSERA_RETURN_IF_ERROR(options.sampling.validate());
  if (options.prefill_chunk <= 0) return invalid_argument("prefill chunk must be positive");
  if (prompt.empty()) return out_of_range("the prompt is empty");
  const int64_t ctx = context_tokens();
  if (static_cast<int64_t>(prompt.size()) >= ctx) {
    return out_of_range("the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds " +
                        std::to_string(ctx) + " (raise --ctx-size or --kv-cache-memory)");
  }
  GenerationStats stats;
  stats.prompt_tokens = static_cast<int32_t>(prompt.size());
  const auto t0 = Clock::now();
  BlockTable table(kv_->spec().block_size);
  Sampler sampler(options.sampling);
  std::vector<int32_t> tokens = prompt;
  std::vector<float> logits;
  const Tokenizer& tok = model_.tokenizer();
  Status st;
  // Prefill.
  st = table.reserve(static_cast<int64_t>(tokens.size()), block_pool_);
  for (int32_t begin = 0; st.ok() && begin < stats.prompt_tokens; begin += options.prefill_chunk) {
    const int32_t end = std::min(stats.prompt_tokens, begin + options.prefill_chunk);
    st = transformer_.forward(single_sequence_batch(tokens, begin, end, table), *kv_, logits);
  }
  stats.prefill_ms = ms_since(t0);
  auto t_decode = Clock::now();
  while (st.ok()) {
    const auto pos = static_cast<int64_t>(tokens.size());
    const int32_t next = sampler.sample(logits, pos);
    if (stats.generated_tokens == 0) {
      stats.ttft_ms = ms_since(t0);
      t_decode = Clock::now();
    }
    if (tok.is_eog(next)) {
      stats.finish = FinishReason::kStop;
      break;
    }
    ++stats.generated_tokens;
    tokens.push_back(next);
    if (!on_token(next)) {
      stats.finish = FinishReason::kStop;
      break;
    }
    if ((options.max_tokens >= 0 && stats.generated_tokens >= options.max_tokens) || pos + 1 >= ctx) {
      stats.finish = FinishReason::kLength;
      break;
    }
    st = table.reserve(pos + 1, block_pool_);
    if (st.ok()) st = transformer_.forward(single_sequence_batch(tokens, static_cast<int32_t>(pos), static_cast<int32_t>(pos + 1), table), *kv_, logits);
  }
  if (stats.generated_tokens > 0) stats.decode_ms = ms_since(t_decode);
  table.release_all(block_pool_);
  if (!st.ok()) return st;
  return stats;
}

}  // namespace tessera
