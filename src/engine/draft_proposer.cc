#include "engine/draft_proposer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/speculative.h"

namespace tessera {

Status check_same_vocab(const Model& target, const Model& draft) {
  const int32_t nt = target.config().n_vocab, nd = draft.config().n_vocab;
  if (nt != nd) {
    return invalid_argument("draft model " + draft.path() + " has a vocabulary of " + std::to_string(nd) +
                            " tokens but the target " + target.path() + " has " + std::to_string(nt));
  }
  if (target.has_tokenizer() != draft.has_tokenizer()) {
    const Model& without = target.has_tokenizer() ? draft : target;
    return invalid_argument("the vocabularies of the draft model " + draft.path() + " and the target " + target.path() +
                            " cannot be compared: " + without.path() + " has no tokenizer");
  }
  if (!target.has_tokenizer()) return {};  // neither has one: the sizes agree
  for (int32_t id = 0; id < nt; ++id) {
    const std::string& a = target.tokenizer().token_text(id);
    const std::string& b = draft.tokenizer().token_text(id);
    if (a != b) {
      return invalid_argument("draft model " + draft.path() + " has another vocabulary than the target " +
                              target.path() + ": token " + std::to_string(id) + " is '" + b + "' there, '" + a +
                              "' in the target");
    }
  }
  return {};
}

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(const Model& target, const Model& draft,
                                                                       const DraftProposerConfig& config) {
  TESSERA_RETURN_IF_ERROR(check_same_vocab(target, draft));
  ExecutorConfig ec;
  ec.backend = config.backend;
  ec.kv_dtype = config.kv_dtype;
  ec.ctx_size = std::max<int64_t>(config.kv_tokens, 2);
  auto executor = ModelExecutor::create(draft, ec);
  if (!executor.ok()) return Status(executor.status().code(), "draft model: " + executor.status().message());
  return std::unique_ptr<DraftModelProposer>(new DraftModelProposer(draft, std::move(*executor)));
}

DraftModelProposer::DraftModelProposer(const Model& draft, std::unique_ptr<ModelExecutor> executor)
    : draft_(draft),
      executor_(std::move(executor)),
      kv_(executor_->kv_spec().num_blocks, executor_->kv_spec().block_size, /*enable_prefix_cache=*/false) {}

void DraftModelProposer::drop(uint64_t seq_id) {
  auto it = states_.find(seq_id);
  if (it == states_.end()) return;
  kv_.release(it->second.table);
  states_.erase(it);
}

void DraftModelProposer::propose(std::span<ProposeItem> items) {
  const auto n_vocab = static_cast<size_t>(draft_.config().n_vocab);
  const int32_t bs = kv_.block_size();
  struct Active {
    ProposeItem* item;
    State* state;
    Sampler sampler;  // the sequence's processors; penalties also see the drafted tokens
    int64_t n;        // the sequence's tokens
    int64_t begin;    // first token the draft computes in the first call
    bool alive = true;
    bool one_hot = true;
    int32_t row = -1;  // logits row in the current call
  };
  std::vector<Active> active;
  active.reserve(items.size());
  int32_t k_max = 0;
  for (ProposeItem& item : items) {
    item.out->clear();
    const auto n = static_cast<int64_t>(item.tokens.size());
    if (item.k < 1 || n < 1) continue;
    State& s = states_.try_emplace(item.seq_id, bs).first->second;
    // The draft's KV stays valid up to the first token the sequence did not keep.
    int64_t c = std::min(s.synced, n);
    for (size_t i = 0; i < s.fed.size() && c < n && item.tokens[static_cast<size_t>(c)] == s.fed[i]; ++i) ++c;
    c = std::min(c, n - 1);  // the last token is fed again for its logits
    kv_.truncate(s.table, c);
    s.synced = c;
    s.fed.clear();
    // Positions up to n + k - 2 are written (the last drafted token is not fed).
    if (!kv_.allocate(s.table, n + item.k - 1).ok()) {
      kv_.truncate(s.table, c);
      continue;
    }
    active.push_back(Active{&item, &s, *item.sampler, n, c});
    k_max = std::max(k_max, item.k);
  }
  std::vector<float> logits;
  for (int32_t j = 0; j < k_max; ++j) {
    ForwardBatch b;
    for (Active& a : active) {
      a.row = -1;
      if (!a.alive || a.item->k <= j) continue;
      const auto row0 = static_cast<int32_t>(b.token_ids.size());
      const int64_t first = j == 0 ? a.begin : a.n + j - 1;
      const int64_t end = a.n + j;
      for (int64_t p = first; p < end; ++p) {
        b.token_ids.push_back(p < a.n ? a.item->tokens[static_cast<size_t>(p)]
                                      : a.item->out->tokens[static_cast<size_t>(p - a.n)]);
        b.positions.push_back(static_cast<int32_t>(p));
        b.slot_mapping.push_back(a.state->table.slot(p));
      }
      b.seqs.push_back({row0, static_cast<int32_t>(end - first), std::span<const int32_t>(a.state->table.blocks())});
      a.row = static_cast<int32_t>(b.logits_rows.size());
      b.logits_rows.push_back(b.n_tokens() - 1);
      if (j > 0) a.state->fed.push_back(a.item->out->tokens.back());
    }
    if (b.logits_rows.empty()) break;
    const auto t0 = std::chrono::steady_clock::now();
    const Status st = executor_->forward(b, logits);
    forward_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++forward_calls_;
    for (Active& a : active) {
      if (a.row < 0) continue;
      if (j == 0) a.state->synced = a.n;
      if (!st.ok()) {
        a.alive = false;
        continue;
      }
      const std::span<const float> row(&logits[static_cast<size_t>(a.row) * n_vocab], n_vocab);
      if (!a.sampler.prepare(row).ok()) {
        a.alive = false;  // NaN draft logits: propose what was drafted so far
        continue;
      }
      const int64_t position = a.n + j;
      const int32_t tok = a.sampler.draw(Sampler::uniform(draft_seed(a.sampler.seed()), position));
      Proposal& out = *a.item->out;
      const std::vector<Sampler::Prob> cand = a.sampler.candidates();
      if (cand.size() > 1) a.one_hot = false;
      out.q.resize((out.tokens.size() + 1) * n_vocab, 0.0f);
      float* q = &out.q[out.tokens.size() * n_vocab];
      for (const Sampler::Prob& c : cand) q[static_cast<size_t>(c.id)] = static_cast<float>(c.p);
      out.tokens.push_back(tok);
      a.sampler.accept(tok);
    }
  }
  for (Active& a : active) {
    if (a.one_hot) a.item->out->q.clear();  // q one-hot at each token: deterministic
    // Keep the blocks of the computed tokens only (the invariant between steps).
    kv_.truncate(a.state->table, a.state->synced + static_cast<int64_t>(a.state->fed.size()));
  }
}

Status DraftModelProposer::check_invariants() const {
  if (!kv_.check_invariants()) return internal_error("draft KV cache manager invariants violated");
  std::vector<int32_t> refs(static_cast<size_t>(kv_.num_blocks()), 0);
  const int64_t bs = kv_.block_size();
  for (const auto& [id, s] : states_) {
    const int64_t computed = s.synced + static_cast<int64_t>(s.fed.size());
    const auto have = static_cast<int64_t>(s.table.blocks().size());
    if (have != (computed + bs - 1) / bs) {
      return internal_error("draft sequence " + std::to_string(id) + " holds " + std::to_string(have) + " blocks for " +
                            std::to_string(computed) + " computed tokens");
    }
    for (int32_t blk : s.table.blocks()) ++refs[static_cast<size_t>(blk)];
  }
  for (size_t blk = 0; blk < refs.size(); ++blk) {
    if (refs[blk] != kv_.ref_count(static_cast<int32_t>(blk)))
      return internal_error("draft block " + std::to_string(blk) + " has " +
                            std::to_string(kv_.ref_count(static_cast<int32_t>(blk))) + " references but " +
                            std::to_string(refs[blk]) + " tables hold it");
  }
  return {};
}

}  // namespace tessera
