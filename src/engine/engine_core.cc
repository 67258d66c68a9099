#include "engine/engine_core.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>

#include "engine/draft_proposer.h"
#include "engine/ngram_proposer.h"
#include "engine/sequence_proposers.h"
#include "model/micro_batch.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr int kChoiceBits = 8;  // SeqSlot id = request id << 8 | choice (n <= 128)

}  // namespace

double RequestMetrics::tpot_ms() const {
  return itl_ms.empty() ? 0 : std::accumulate(itl_ms.begin(), itl_ms.end(), 0.0) / static_cast<double>(itl_ms.size());
}

struct EngineCore::Request {
  uint64_t id = 0;
  std::vector<int32_t> prompt;
  GenerationOptions options;
  Callback callback;
  int32_t priority = 0;
  int64_t max_total_tokens = 0;
  std::vector<std::unique_ptr<Sequence>> seqs;  // [n]
  std::vector<std::unique_ptr<SeqSlot>> slots;  // [n]
  int32_t n_finished = 0;
  Clock::time_point arrival;
  Clock::time_point last_token;
  bool scheduled = false;
  bool has_token = false;
  RequestMetrics metrics;
  std::vector<ChoiceResult> results;
  int32_t prompt_logits_next = 0;  // first prompt position whose logits are not yet delivered
  // Speculative decoding, per choice (empty when the request does not speculate).
  std::vector<Proposal> proposals;  // this step's proposal
  std::vector<int32_t> lookahead;   // the current k (adaptive)
  std::vector<AcceptanceEstimate> acceptance;
  // A deterministic proposal the cost-aware switch did not verify: the
  // tokens the choice goes on to emit from `position` tell whether it would
  // have been accepted (a one-hot proposal is accepted iff the target draws
  // it), so its acceptance keeps being measured.
  struct Unverified {
    std::vector<int32_t> tokens;
    int64_t position = 0;
  };
  std::vector<Unverified> shadow;
  // finish_request while a choice is in flight: done when its step completes.
  bool finish_deferred = false;
  Status deferred_error;
  bool deferred_cancelled = false;
};

namespace {
// Every this many decisions the cost-aware switch verifies the largest cap,
// so that a step time measured during a slow spell is measured again.
constexpr int64_t kExploreInterval = 64;
}  // namespace

Result<std::unique_ptr<EngineCore>> EngineCore::create(const Model& model, const EngineConfig& config) {
  return create(model, config, nullptr);
}

Result<std::unique_ptr<EngineCore>> EngineCore::create(const Model& model, const EngineConfig& config,
                                                       std::unique_ptr<Backend> backend) {
  if (config.max_num_seqs < 1) return invalid_argument("--max-num-seqs must be >= 1");
  if (config.max_num_batched_tokens < 1) return invalid_argument("--max-num-batched-tokens must be >= 1");
  if (config.ctx_size < 2) return invalid_argument("--ctx-size must be >= 2");
  TESSERA_RETURN_IF_ERROR(config.spec.validate());
  ExecutorConfig ec;
  ec.backend = config.backend;
  ec.backend.threads = config.threads;
  ec.kv_dtype = config.kv_dtype;
  ec.kv_cache_memory = config.kv_cache_memory;
  ec.ctx_size = config.ctx_size;
  ec.parallel = config.parallel;
  ec.quantize = config.quantize;
  ec.check_tensors = config.check_tensors;
  TESSERA_ASSIGN_OR_RETURN(auto executor, ModelExecutor::create(model, ec, std::move(backend)));
  EngineConfig cfg = config;
  // One sequence may use the whole cache when it is sized by memory.
  if (config.kv_cache_memory > 0) cfg.ctx_size = executor->kv_spec().capacity_tokens();
  std::unique_ptr<BatchProposer> proposer;
  const std::string method = config.spec.effective_method();
  if (config.proposer_factory) {
    proposer = std::make_unique<SequenceProposers>(config.proposer_factory);
  } else if (method == "ngram") {
    const int32_t n_min = config.spec.ngram_min, n_max = config.spec.ngram_max;
    proposer = std::make_unique<SequenceProposers>(
        [n_min, n_max](uint64_t, int32_t) { return std::make_unique<NgramProposer>(n_min, n_max); });
  } else if (method == "draft") {
    if (config.draft_model == nullptr) return invalid_argument("--spec draft needs --draft-model PATH");
    if (config.parallel.world_size() > 1) {
      return invalid_argument(
          "--draft-model cannot be combined with --tensor-parallel-size/--pipeline-parallel-size (the draft runs on "
          "one rank only)");
    }
    // A draft cache smaller than one whole sequence would silently stop drafting for long ones.
    if (config.spec.draft_kv_tokens > 0 && config.spec.draft_kv_tokens < cfg.ctx_size + config.spec.k) {
      return invalid_argument("--draft-kv-tokens " + std::to_string(config.spec.draft_kv_tokens) +
                              " cannot hold one sequence: it needs at least the context (" +
                              std::to_string(cfg.ctx_size) + " tokens) plus --spec-k (" +
                              std::to_string(config.spec.k) + ")");
    }
    DraftProposerConfig dc;
    dc.backend = config.backend;
    dc.backend.threads = config.spec.draft_threads > 0 ? config.spec.draft_threads : config.threads;
    dc.kv_dtype = config.kv_dtype;
    const KvCacheSpec& ks = executor->kv_spec();
    dc.kv_tokens = config.spec.draft_kv_tokens > 0 ? config.spec.draft_kv_tokens
                                                   : ks.capacity_tokens() + static_cast<int64_t>(config.max_num_seqs) *
                                                                                (config.spec.k + ks.block_size);
    TESSERA_ASSIGN_OR_RETURN(proposer, DraftModelProposer::create(model, *config.draft_model, dc));
  }
  return std::unique_ptr<EngineCore>(new EngineCore(model, cfg, std::move(executor), std::move(proposer)));
}

EngineCore::EngineCore(const Model& model, const EngineConfig& config, std::unique_ptr<ModelExecutor> executor,
                       std::unique_ptr<BatchProposer> proposer)
    : model_(model),
      config_(config),
      executor_(std::move(executor)),
      proposer_(std::move(proposer)),
      kv_(executor_->kv_spec().num_blocks, executor_->kv_spec().block_size, config.enable_prefix_cache,
          static_cast<uint64_t>(executor_->kv_spec().dtype) * 0x100000001b3ull ^
              std::hash<std::string>{}(model.path())),
      scheduler_(SchedulerConfig{config.max_num_seqs, config.max_num_batched_tokens, config.ctx_size}, kv_) {}

EngineCore::~EngineCore() {
  stop();
}

Result<uint64_t> EngineCore::submit(std::vector<int32_t> prompt, const GenerationOptions& options, Callback on_event,
                                    int32_t priority) {
  TESSERA_RETURN_IF_ERROR(options.validate(model_.config().n_vocab));
  if (!options.stop.empty() && !model_.has_tokenizer()) return invalid_argument("stop strings need a tokenizer");
  if (prompt.empty()) return out_of_range("the prompt is empty");
  for (int32_t id : prompt) {
    if (id < 0 || id >= model_.config().n_vocab)
      return invalid_argument("prompt token " + std::to_string(id) + " is outside the vocabulary");
  }
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  const int64_t ctx = config_.ctx_size;
  // A prompt may fill the context only when nothing is to be generated
  // (max_tokens 0: the prompt is scored or timed, and the request ends with
  // finish reason "length"; Scheduler::can_admit then reserves no slot for a
  // next token).
  if (n_prompt > ctx || (n_prompt == ctx && options.max_tokens != 0)) {
    return out_of_range("the prompt has " + std::to_string(n_prompt) + " tokens but the context holds " +
                        std::to_string(ctx) + ", which must leave room for a generated token");
  }
  const int64_t max_total = options.max_tokens < 0 ? ctx : n_prompt + options.max_tokens;
  if (max_total > ctx) {
    return out_of_range("the prompt (" + std::to_string(n_prompt) + " tokens) plus max_tokens (" +
                        std::to_string(options.max_tokens) + ") exceeds the context length " + std::to_string(ctx));
  }
  const int64_t bs = executor_->kv_spec().block_size;
  if ((max_total + bs - 1) / bs > executor_->kv_spec().num_blocks) {
    return out_of_range("the prompt plus max_tokens (" + std::to_string(max_total) +
                        " tokens) can never fit in the KV cache (" +
                        std::to_string(executor_->kv_spec().capacity_tokens()) + " tokens)");
  }
  auto r = std::make_unique<Request>();
  r->id = next_id_.fetch_add(1);
  r->prompt = std::move(prompt);
  r->options = options;
  r->callback = std::move(on_event);
  r->priority = priority;
  r->max_total_tokens = max_total;
  r->arrival = Clock::now();
  const uint64_t id = r->id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(std::move(r));
  }
  cv_.notify_all();
  return id;
}

void EngineCore::cancel(uint64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(request_id);
  }
  cv_.notify_all();
}

void EngineCore::drain_inbox() {
  std::vector<std::unique_ptr<Request>> inbox;
  std::vector<uint64_t> cancels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox.swap(inbox_);
    cancels.swap(cancels_);
  }
  for (auto& r : inbox) {
    for (int32_t i = 0; i < r->options.n; ++i) {
      r->seqs.push_back(std::make_unique<Sequence>(model_, r->options, r->prompt, i, config_.ctx_size));
      r->slots.push_back(std::make_unique<SeqSlot>((r->id << kChoiceBits) | static_cast<uint64_t>(i), r->priority,
                                                   arrivals_++, &r->seqs.back()->tokens(), r->max_total_tokens,
                                                   executor_->kv_spec().block_size));
      r->slots.back()->use_prefix_cache = !r->options.prompt_logits;
      if (speculation_on() && r->options.speculative && !r->options.prompt_logits) {
        r->proposals.emplace_back();
        r->lookahead.push_back(config_.spec.k);
        r->acceptance.emplace_back();
        r->shadow.emplace_back();
      }
    }
    Request& req = *r;
    requests_.emplace(r->id, std::move(r));
    for (auto& slot : req.slots) {
      const Status st = scheduler_.add(slot.get());
      if (!st.ok()) {
        finish_request(req, st);
        break;
      }
    }
  }
  for (uint64_t id : cancels) {
    auto it = requests_.find(id);
    if (it != requests_.end()) finish_request(*it->second, Status(), /*cancelled=*/true);
  }
}

void EngineCore::propose() {
  const bool on = scheduler_.num_running() <= config_.spec.disable_batch_size;
  std::vector<ProposeItem> items;
  for (auto& [id, r] : requests_) {
    for (size_t c = 0; c < r->proposals.size(); ++c) {
      SeqSlot& slot = *r->slots[c];
      if (slot.in_flight) continue;  // its proposal is verified when its step completes
      r->proposals[c].clear();
      slot.num_spec = 0;
      const Sequence& seq = *r->seqs[c];
      if (std::vector<int32_t>& shadow = r->shadow[c].tokens; !shadow.empty()) {
        // Compare the unverified proposal with what the choice emitted since.
        const std::span<const int32_t> toks = seq.tokens();
        const int64_t pos = r->shadow[c].position;
        const auto seen = static_cast<int32_t>(
            std::min<int64_t>(static_cast<int64_t>(shadow.size()), static_cast<int64_t>(toks.size()) - pos));
        if (seen > 0) {
          int32_t matched = 0;
          while (matched < seen && toks[static_cast<size_t>(pos + matched)] == shadow[static_cast<size_t>(matched)])
            ++matched;
          // A mismatch is a rejection; a match with nothing after it yet counts as accepted so far.
          r->acceptance[c].observe(matched < seen ? matched + 1 : matched, matched);
          shadow.clear();
        }
      }
      if (!on || seq.finished() || slot.status != SeqStatus::kRunning || slot.num_tokens() - slot.num_computed != 1)
        continue;
      // Proposed positions stay below the request's token bound (and so the context).
      const int64_t room = r->max_total_tokens - seq.num_tokens();
      const auto k = static_cast<int32_t>(std::min<int64_t>(r->lookahead[c], room));
      if (k <= 0) continue;
      ProposeItem item;
      item.seq_id = slot.id;
      item.tokens = seq.tokens();
      item.k = k;
      item.sampler = &seq.sampler();
      item.choice = static_cast<int32_t>(c);
      item.out = &r->proposals[c];
      items.push_back(item);
    }
  }
  if (items.empty()) return;
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  // The switch caps greedy sequences only. With a random proposer (the draft
  // model) a sampling sequence's text depends on how many tokens were drafted
  // at each step, and the switch decides from measured times, so a seeded
  // request would not give the same text run after run; its lookahead stays
  // the adaptive rule's (a function of its own history).
  if (proposer_->runs_model()) {
    // Decide before paying for the draft's forward calls.
    if (config_.spec.cost_aware) {
      std::vector<ProposeItem> greedy;
      for (const ProposeItem& item : items)
        if (item.sampler->greedy()) greedy.push_back(item);
      if (!greedy.empty()) {
        const int32_t cap = lookahead_cap(greedy, /*proposed=*/false);
        for (ProposeItem& item : items)
          if (item.sampler->greedy()) item.k = std::min(item.k, cap);
      }
    }
    int32_t drafted = 0;
    for (const ProposeItem& item : items) drafted = std::max(drafted, item.k);
    if (drafted == 0) return;
    const auto t0 = Clock::now();
    proposer_->propose(items);
    const double ms = ms_between(t0, Clock::now());
    draft_ms_per_token_.observe(static_cast<int64_t>(items.size()), ms / drafted);
    std::lock_guard<std::mutex> lock(mu_);
    metrics_.spec_draft_ms += ms;
  } else {
    proposer_->propose(items);
    if (config_.spec.cost_aware) {
      // A random proposal (a test's proposer) is trimmed only for a greedy sequence, as above.
      auto trimmable = [](const ProposeItem& item) { return item.out->q.empty() || item.sampler->greedy(); };
      std::vector<ProposeItem> capped;
      for (const ProposeItem& item : items)
        if (trimmable(item)) capped.push_back(item);
      const int32_t cap = lookahead_cap(capped, /*proposed=*/true);
      for (ProposeItem& item : items) {
        Proposal& prop = *item.out;
        if (!trimmable(item) || prop.tokens.size() <= static_cast<size_t>(cap)) continue;
        Request& r = *requests_.at(item.seq_id >> kChoiceBits);
        const auto c = static_cast<size_t>(item.choice);
        if (cap == 0 && prop.q.empty()) r.shadow[c] = {prop.tokens, r.seqs[c]->num_tokens()};
        prop.tokens.resize(static_cast<size_t>(cap));
        if (!prop.q.empty()) prop.q.resize(prop.tokens.size() * n_vocab);
      }
    }
  }
  for (const ProposeItem& item : items) {
    Proposal& prop = *item.out;
    if (prop.tokens.size() > static_cast<size_t>(item.k)) prop.tokens.resize(static_cast<size_t>(item.k));
    requests_.at(item.seq_id >> kChoiceBits)->slots[static_cast<size_t>(item.choice)]->num_spec =
        static_cast<int32_t>(prop.tokens.size());
  }
}

int32_t EngineCore::lookahead_cap(std::span<const ProposeItem> items, bool proposed) {
  std::vector<SpecCandidate> cands;
  cands.reserve(items.size());
  int32_t largest = 0;
  for (const ProposeItem& item : items) {
    const Request& r = *requests_.at(item.seq_id >> kChoiceBits);
    SpecCandidate cand;
    cand.alpha = r.acceptance[static_cast<size_t>(item.choice)].value();
    cand.max_tokens = proposed ? static_cast<int32_t>(item.out->tokens.size()) : item.k;
    largest = std::max(largest, cand.max_tokens);
    cands.push_back(cand);
  }
  if (largest == 0) return 0;
  // Running sequences that do not speculate this step decode one row each.
  const int64_t others = std::max<int64_t>(0, scheduler_.num_running() - static_cast<int64_t>(items.size()));
  std::function<double(int32_t)> draft_ms;
  if (!proposed) {
    const double per_token = draft_ms_per_token_.estimate(static_cast<int64_t>(items.size()));
    draft_ms = [per_token](int32_t cap) { return per_token * cap; };
  }
  int32_t cap = choose_lookahead_cap(cands, others, step_ms_, draft_ms);
  if (++spec_decisions_ % kExploreInterval == 0) cap = largest;
  if (cap == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    ++metrics_.spec_declined_steps;
  }
  return cap;
}

bool EngineCore::in_flight(uint64_t request_id) const {
  auto it = requests_.find(request_id);
  return it != requests_.end() && any_in_flight(*it->second);
}

bool EngineCore::any_in_flight(const Request& r) const {
  return std::any_of(r.slots.begin(), r.slots.end(), [](const auto& s) { return s->in_flight; });
}

void EngineCore::finish_request(Request& r, const Status& error, bool cancelled) {
  if (any_in_flight(r)) {
    // Its blocks may still be written by later stages: the step that holds
    // it finishes it. Its other choices stop now.
    if (!r.finish_deferred) {
      r.finish_deferred = true;
      r.deferred_error = error;
      r.deferred_cancelled = cancelled;
    }
    for (auto& slot : r.slots)
      if (!slot->in_flight && slot->status != SeqStatus::kFinished) scheduler_.finish(slot.get());
    return;
  }
  for (size_t i = 0; i < r.slots.size(); ++i) {
    if (r.slots[i]->status != SeqStatus::kFinished) scheduler_.finish(r.slots[i].get());
    if (proposer_) proposer_->finished(r.slots[i]->id);
  }
  const auto now = Clock::now();
  r.metrics.e2e_ms = ms_between(r.arrival, now);
  r.metrics.prompt_tokens = static_cast<int32_t>(r.prompt.size());
  r.metrics.speculative = !r.proposals.empty();
  r.metrics.cached_tokens = r.slots.empty() ? 0 : static_cast<int32_t>(r.slots[0]->num_cached);
  for (auto& slot : r.slots) r.metrics.preemptions += slot->num_preemptions;
  for (auto& s : r.seqs) r.results.push_back(s->result());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled) {
      ++metrics_.finished_cancelled;
    } else if (!error.ok()) {
      ++metrics_.finished_error;
    } else {
      for (const auto& res : r.results)
        ++(res.finish == FinishReason::kStop ? metrics_.finished_stop : metrics_.finished_length);
    }
  }
  RequestEvent ev;
  ev.request_id = r.id;
  ev.request_finished = true;
  ev.results = &r.results;
  ev.metrics = &r.metrics;
  ev.error = error;
  ev.cancelled = cancelled;
  if (r.callback) r.callback(ev);
  requests_.erase(r.id);
}

ForwardBatch EngineCore::build_batch(InFlightStep& f) const {
  ForwardBatch b;
  int64_t prompt_tokens = 0;
  std::vector<ItemRows>& rows = f.rows;
  rows.clear();
  for (const ScheduledSeq& item : f.out.scheduled) {
    const SeqSlot& s = *item.seq;
    const Request& r = *requests_.at(s.id >> kChoiceBits);
    // A prompt chunk of a request that wants its prompt's logits: every row.
    const bool all = r.options.prompt_logits && s.num_computed < static_cast<int64_t>(r.prompt.size());
    const auto kind = all ? ForwardBatch::Logits::kAll
                          : (item.needs_logits ? ForwardBatch::Logits::kLast : ForwardBatch::Logits::kNone);
    ItemRows ir;
    ir.first = static_cast<int32_t>(b.logits_rows.size());
    ir.n = all ? item.num_new_tokens : (item.needs_logits ? 1 + item.num_spec_tokens : 0);
    ir.position = static_cast<int32_t>(all ? s.num_computed : s.num_computed + item.num_new_tokens - 1);
    rows.push_back(ir);
    b.append(*s.tokens, s.num_computed, s.num_computed + item.num_new_tokens, s.table, kind);
    if (item.num_spec_tokens > 0) {
      // The proposed tokens continue the sequence's rows; each gets logits
      // (the last one's are the bonus position's).
      const Proposal& prop = r.proposals[static_cast<size_t>(s.id & ((1u << kChoiceBits) - 1))];
      AttentionSeq& as = b.seqs.back();
      for (int32_t j = 0; j < item.num_spec_tokens; ++j) {
        const int64_t p = s.num_computed + item.num_new_tokens + j;
        b.logits_rows.push_back(b.n_tokens());
        b.token_ids.push_back(prop.tokens[static_cast<size_t>(j)]);
        b.positions.push_back(static_cast<int32_t>(p));
        b.slot_mapping.push_back(s.table.slot(p));
        ++as.n_tokens;
      }
    }
    // A decode row computes one token the model generated (a one-token
    // prompt chunk, e.g. after a prefix-cache hit, is still prefill).
    const bool decode =
        item.num_new_tokens == 1 && item.needs_logits && s.num_computed >= static_cast<int64_t>(r.prompt.size());
    if (!decode) prompt_tokens += item.num_new_tokens;
  }
  f.prompt_tokens = prompt_tokens;
  f.n_tokens = b.n_tokens();
  return b;
}

bool EngineCore::issue_step() {
  if (speculation_on()) propose();
  // Under P > 1 each step in flight takes its share of the sequences, so the
  // next step finds some that are not in flight, when the shares are big
  // enough to pay (EngineConfig::pp_step_min_seqs).
  const int depth = executor_->max_in_flight();
  int32_t max_seqs = INT32_MAX;
  if (depth > 1) {
    const int32_t active =
        std::min(scheduler_.num_running() + scheduler_.num_waiting(), scheduler_.config().max_num_seqs);
    const int32_t share = std::max<int32_t>(1, (active + depth - 1) / depth);
    const int32_t min_share = config_.pp_step_min_seqs >= 0 ? config_.pp_step_min_seqs : micro_batch_min_rows();
    if (share >= min_share) max_seqs = share;
  }
  InFlightStep f;
  f.out = scheduler_.schedule(max_seqs);
  // A preempted sequence recomputes its KV on resume, the draft's included.
  if (proposer_)
    for (SeqSlot* s : f.out.preempted) proposer_->preempted(s->id);
  if (f.out.scheduled.empty()) return false;
  const auto now = Clock::now();
  for (const ScheduledSeq& item : f.out.scheduled) {
    Request& r = *requests_.at(item.seq->id >> kChoiceBits);
    if (!r.scheduled) {
      r.scheduled = true;
      r.metrics.queue_ms = ms_between(r.arrival, now);
    }
  }
  const ForwardBatch b = build_batch(f);
  if (in_flight_.empty()) {
    mark_time_ = Clock::now();
    mark_comm_ = executor_->comm_stats();
  }
  if (Status st = executor_->issue(b); !st.ok()) {
    // Never expected (batches are built valid): fail the requests involved.
    fail_step(f, st);
    return true;
  }
  for (const ScheduledSeq& item : f.out.scheduled) item.seq->in_flight = true;
  if (!in_flight_.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++metrics_.steps_overlapped;
  }
  in_flight_.push_back(std::move(f));
  return true;
}

void EngineCore::fail_step(const InFlightStep& f, const Status& st) {
  std::vector<uint64_t> ids;
  for (const ScheduledSeq& item : f.out.scheduled) ids.push_back(item.seq->id >> kChoiceBits);
  for (uint64_t id : ids) {
    auto it = requests_.find(id);
    if (it != requests_.end())
      finish_request(*it->second, it->second->finish_deferred ? it->second->deferred_error : st,
                     it->second->deferred_cancelled);
  }
}

void EngineCore::complete_step() {
  InFlightStep f = std::move(in_flight_.front());
  in_flight_.pop_front();
  std::vector<float> logits;
  const Status st = executor_->complete(logits);
  const auto now = Clock::now();
  const CommStats comm = executor_->comm_stats();
  const double ms = ms_between(mark_time_, now);
  if (speculation_on())
    step_ms_.observe(f.n_tokens, config_.step_ms_for_test ? config_.step_ms_for_test(f.n_tokens) : ms);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool prefill = f.prompt_tokens > 0;
    ++metrics_.steps;
    metrics_.prompt_tokens_computed += f.prompt_tokens;
    (prefill ? metrics_.prefill_ms : metrics_.decode_ms) += ms;
    (prefill ? metrics_.prefill_comm_ms : metrics_.decode_comm_ms) += 1000.0 * (comm.seconds - mark_comm_.seconds);
    (prefill ? metrics_.prefill_comm_bytes : metrics_.decode_comm_bytes) += comm.bytes - mark_comm_.bytes;
    if (!prefill) {
      metrics_.decode_tokens += f.n_tokens;
      ++metrics_.decode_steps;
    }
  }
  mark_time_ = now;
  mark_comm_ = comm;
  // The step has left every stage: its sequences may be scheduled, preempted and freed again.
  std::vector<uint64_t> ids;  // its requests
  for (const ScheduledSeq& item : f.out.scheduled) {
    item.seq->in_flight = false;
    ids.push_back(item.seq->id >> kChoiceBits);
  }
  if (!st.ok()) {
    fail_step(f, st);
    return;
  }
  apply_step(f, logits);
  for (uint64_t id : ids) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    Request& r = *it->second;
    if (r.finish_deferred && !any_in_flight(r)) finish_request(r, r.deferred_error, r.deferred_cancelled);
  }
}

void EngineCore::apply_step(const InFlightStep& f, const std::vector<float>& logits) {
  const SchedulerOutput& out = f.out;
  const std::vector<ItemRows>& rows = f.rows;
  scheduler_.on_step_done(out);
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  int64_t generated = 0;
  int64_t spec_proposed = 0, spec_accepted = 0, spec_steps = 0;
  for (size_t k = 0; k < out.scheduled.size(); ++k) {
    const ScheduledSeq& item = out.scheduled[k];
    const ItemRows& ir = rows[k];
    auto it = requests_.find(item.seq->id >> kChoiceBits);
    if (it == requests_.end()) continue;  // finished earlier in this loop
    Request& r = *it->second;
    if (r.finish_deferred) continue;  // cancelled or failed while in flight
    if (r.options.prompt_logits && ir.n > 0) {
      // Prompt positions not delivered before (a recomputation after
      // preemption repeats some); positions past the prompt are not prompt logits.
      const int32_t begin = std::max(ir.position, r.prompt_logits_next);
      const int32_t end = std::min(ir.position + ir.n, static_cast<int32_t>(r.prompt.size()));
      if (begin < end && r.callback) {
        RequestEvent pe;
        pe.request_id = r.id;
        pe.prompt_logits = &logits[static_cast<size_t>(ir.first + begin - ir.position) * n_vocab];
        pe.prompt_logits_begin = begin;
        pe.prompt_logits_rows = end - begin;
        r.callback(pe);
      }
      r.prompt_logits_next = std::max(r.prompt_logits_next, end);
    }
    if (!item.needs_logits) continue;
    const auto choice = static_cast<size_t>(item.seq->id & ((1u << kChoiceBits) - 1));
    // Logits of the last computed token, then of each proposed token.
    const int32_t n_rows = 1 + item.num_spec_tokens;
    const std::span<const float> row_logits(&logits[static_cast<size_t>(ir.first + ir.n - n_rows) * n_vocab],
                                            n_vocab * static_cast<size_t>(n_rows));
    Proposal none;
    Proposal& prop = item.num_spec_tokens > 0 ? r.proposals[choice] : none;
    prop.tokens.resize(static_cast<size_t>(item.num_spec_tokens));  // the scheduler may have kept fewer
    if (!prop.q.empty()) prop.q.resize(prop.tokens.size() * n_vocab);
    int32_t accepted = 0;
    auto events = r.seqs[choice]->on_verify(row_logits, prop, &accepted);
    if (!events.ok()) {
      finish_request(r, events.status());
      continue;
    }
    if (item.num_spec_tokens > 0) {
      scheduler_.commit_spec(r.slots[choice].get(), accepted);
      r.acceptance[choice].observe(item.num_spec_tokens, accepted);
      r.metrics.spec_proposed_tokens += item.num_spec_tokens;
      r.metrics.spec_accepted_tokens += accepted;
      ++r.metrics.spec_steps;
      spec_proposed += item.num_spec_tokens;
      spec_accepted += accepted;
      ++spec_steps;
      if (config_.spec.adaptive) {
        // Grow after a fully accepted run, shrink to just past what was accepted otherwise.
        int32_t& look = r.lookahead[choice];
        look = accepted == item.num_spec_tokens ? std::min(config_.spec.k, look + 1)
                                                : std::max(1, std::min(look, accepted + 1));
      }
    }
    const auto t = Clock::now();
    for (StreamEvent& ev : *events) {
      if (ev.token >= 0) {
        ++generated;
        ++r.metrics.generated_tokens;
        if (!r.has_token) {
          r.has_token = true;
          r.metrics.ttft_ms = ms_between(r.arrival, t);
        } else if (choice == 0) {
          r.metrics.itl_ms.push_back(ms_between(r.last_token, t));
        }
        if (choice == 0) r.last_token = t;
      }
      if (r.callback && (ev.token >= 0 || !ev.text.empty())) {
        RequestEvent re;
        re.request_id = r.id;
        re.step = std::move(ev);
        r.callback(re);
      }
    }
    if (r.seqs[choice]->finished()) {
      scheduler_.finish(r.slots[choice].get());
      if (proposer_) proposer_->finished(r.slots[choice]->id);
      if (++r.n_finished == static_cast<int32_t>(r.seqs.size())) finish_request(r, Status());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    metrics_.generated_tokens += generated;
    metrics_.spec_proposed_tokens += spec_proposed;
    metrics_.spec_accepted_tokens += spec_accepted;
    metrics_.spec_steps += spec_steps;
  }
}

bool EngineCore::step() {
  drain_inbox();
  bool issued = false;
  if (static_cast<int>(in_flight_.size()) < executor_->max_in_flight()) issued = issue_step();
  if (in_flight_.empty()) {
    publish_gauges();
    return issued || !requests_.empty();
  }
  // Fill the pipeline before waiting on its oldest step.
  if (!issued || static_cast<int>(in_flight_.size()) >= executor_->max_in_flight()) complete_step();
  publish_gauges();
  return true;
}

void EngineCore::publish_gauges() {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_.running = scheduler_.num_running();
  metrics_.waiting = scheduler_.num_waiting() + static_cast<int32_t>(inbox_.size());
  metrics_.kv_blocks_used = kv_.num_used();
  metrics_.kv_blocks_free = kv_.num_available();
  metrics_.prefix_query_tokens = scheduler_.prefix_query_tokens();
  metrics_.prefix_hit_tokens = scheduler_.prefix_hit_tokens();
  metrics_.preemptions = scheduler_.num_preemptions();
}

void EngineCore::run_until_idle() {
  for (;;) {
    bool pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending = !inbox_.empty() || !cancels_.empty();
    }
    if (!step() && !pending) return;
  }
}

void EngineCore::start() {
  stop_.store(false);
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      if (!step()) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(50),
                     [this] { return stop_.load() || !inbox_.empty() || !cancels_.empty(); });
      }
    }
  });
}

void EngineCore::stop() {
  stop_.store(true);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status EngineCore::check_invariants() const {
  if (!kv_.check_invariants()) return internal_error("KV cache manager invariants violated");
  std::vector<int32_t> refs(static_cast<size_t>(kv_.num_blocks()), 0);
  const int64_t bs = kv_.block_size();
  for (const auto& [id, r] : requests_) {
    for (const auto& slot : r->slots) {
      if (slot->status == SeqStatus::kFinished) continue;
      const auto have = static_cast<int64_t>(slot->table.blocks().size());
      if (have != (slot->num_computed + bs - 1) / bs) {
        return internal_error("sequence " + std::to_string(slot->id) + " holds " + std::to_string(have) +
                              " blocks for " + std::to_string(slot->num_computed) + " computed tokens");
      }
      for (int32_t b : slot->table.blocks()) ++refs[static_cast<size_t>(b)];
    }
  }
  for (size_t b = 0; b < refs.size(); ++b) {
    if (refs[b] != kv_.ref_count(static_cast<int32_t>(b)))
      return internal_error("block " + std::to_string(b) + " has " +
                            std::to_string(kv_.ref_count(static_cast<int32_t>(b))) + " references but " +
                            std::to_string(refs[b]) + " tables hold it");
  }
  if (proposer_) return proposer_->check_invariants();
  return {};
}

EngineMetrics EngineCore::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

}  // namespace tessera
