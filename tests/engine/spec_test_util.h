// Helpers of the speculative-decoding tests (speculative_test,
// draft_proposer_test): running jobs in one engine with the block accounting
// checked after every step, comparing outcomes, Pearson's chi-square, and a
// perturbed copy of a GGUF model (a draft whose q differs from p).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/draft_proposer.h"
#include "engine/engine_core.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"

namespace tessera {

struct Job {
  std::vector<int32_t> prompt;
  GenerationOptions options;
};

struct Outcome {
  std::vector<ChoiceResult> choices;
  RequestMetrics metrics;
  std::vector<std::vector<int32_t>> streamed_tokens;  // [choice] tokens of the streamed events
  std::vector<std::string> streamed_text;             // [choice] their text, concatenated
};

// 16 jobs on stories260K: repetitive and plain prompts; stop strings,
// logprobs, n = 2, penalties, max_tokens cutting runs; every 4th job does not
// speculate. Greedy, or with `seeded` the odd jobs sample (T = 1 or 0.7,
// fixed seeds).
inline std::vector<Job> mixed_spec_jobs(const Tokenizer& tok, bool seeded) {
  const char* prompts[] = {
      "Lily and Tom went to the park. Lily and Tom went to the park. Lily and Tom",
      "Once upon a time, there was a little girl named Lily. She loved to play outside",
      "The cat sat on the mat. The dog sat on the mat. The bird sat on the",
      "One day, a big dog ran to the park. One day, a big dog ran",
      "Tom said, \"I want to play!\" Mom said, \"You can play.\" Tom said,",
      "The sun was shining. The birds were singing.",
  };
  std::vector<Job> jobs;
  for (int i = 0; i < 16; ++i) {
    Job j;
    j.prompt = tok.encode(prompts[i % 6], true);
    GenerationOptions& o = j.options;
    o.max_tokens = 20 + (i * 11) % 41;
    if (!seeded || i % 2 == 0) {
      o.sampling.temperature = 0;
    } else {
      o.sampling.temperature = i % 3 == 0 ? 1.0f : 0.7f;
      o.sampling.seed = 77 + static_cast<uint64_t>(i);
    }
    if (i % 5 == 1) o.sampling.repetition_penalty = 1.3f;
    if (i % 5 == 2) o.sampling.presence_penalty = 0.5f;
    if (i % 7 == 3) o.logprobs = 2;
    if (i % 6 == 5) o.stop = {"park", "mat."};
    if (i == 9) o.n = 2;
    if (i == 10) o.stop_token_ids = {tok.encode(" the", false).back()};
    o.speculative = i % 4 != 3;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// Runs all jobs in one engine, checking the block accounting after every step.
inline std::vector<Outcome> run_jobs(const Model& m, const std::vector<Job>& jobs, const EngineConfig& cfg,
                                     EngineMetrics* metrics = nullptr) {
  auto engine = EngineCore::create(m, cfg);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  std::vector<Outcome> out(jobs.size());
  std::map<uint64_t, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto id = (*engine)->submit(jobs[i].prompt, jobs[i].options, [&out, &index](const RequestEvent& ev) {
      Outcome& o = out[index.at(ev.request_id)];
      if (!ev.request_finished) {
        const auto c = static_cast<size_t>(ev.step.choice);
        if (o.streamed_tokens.size() <= c) {
          o.streamed_tokens.resize(c + 1);
          o.streamed_text.resize(c + 1);
        }
        if (ev.step.token >= 0) o.streamed_tokens[c].push_back(ev.step.token);
        o.streamed_text[c] += ev.step.text;
        if (ev.step.token >= 0 && ev.step.logprobs != nullptr) {
          EXPECT_EQ(ev.step.logprobs->token, ev.step.token);
        }
      }
      if (ev.request_finished) {
        EXPECT_TRUE(ev.error.ok()) << ev.error.to_string();
        out[index.at(ev.request_id)].choices = *ev.results;
        out[index.at(ev.request_id)].metrics = *ev.metrics;
      }
    });
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    index[*id] = i;
  }
  int64_t steps = 0;
  while ((*engine)->step()) {
    const Status st = (*engine)->check_invariants();
    EXPECT_TRUE(st.ok()) << "after step " << steps << ": " << st.to_string();
    if (!st.ok()) break;
    ++steps;
  }
  EXPECT_TRUE((*engine)->check_invariants().ok());
  EXPECT_EQ((*engine)->metrics().kv_blocks_used, 0);  // every block free or cached
  if (const auto* draft = dynamic_cast<const DraftModelProposer*>((*engine)->proposer())) {
    EXPECT_EQ(draft->num_tracked(), 0);                        // no state left for finished sequences
    EXPECT_EQ(draft->num_free_blocks(), draft->num_blocks());  // every draft block free
  }
  if (metrics) *metrics = (*engine)->metrics();
  return out;
}

inline void expect_same(const Outcome& got, const Outcome& want, const std::string& what) {
  ASSERT_EQ(got.choices.size(), want.choices.size()) << what;
  for (size_t c = 0; c < want.choices.size(); ++c) {
    const ChoiceResult& g = got.choices[c];
    const ChoiceResult& w = want.choices[c];
    EXPECT_EQ(g.tokens, w.tokens) << what << " choice " << c;
    EXPECT_EQ(g.text, w.text) << what << " choice " << c;
    EXPECT_EQ(g.finish, w.finish) << what << " choice " << c;
    ASSERT_EQ(g.logprobs.size(), w.logprobs.size()) << what;
    for (size_t t = 0; t < w.logprobs.size(); ++t) {
      EXPECT_EQ(g.logprobs[t].token, w.logprobs[t].token);
      EXPECT_EQ(g.logprobs[t].logprob, w.logprobs[t].logprob) << what << " token " << t;  // same logits bit for bit
      EXPECT_EQ(g.logprobs[t].top, w.logprobs[t].top);
    }
  }
  EXPECT_EQ(got.metrics.generated_tokens, want.metrics.generated_tokens) << what;
  // What was streamed is exactly the result: nothing past a stop.
  for (size_t c = 0; c < got.choices.size(); ++c) {
    const std::vector<int32_t> none;
    EXPECT_EQ(c < got.streamed_tokens.size() ? got.streamed_tokens[c] : none, got.choices[c].tokens) << what;
    EXPECT_EQ(c < got.streamed_text.size() ? got.streamed_text[c] : "", got.choices[c].text) << what;
  }
}

// Upper alpha quantile of chi-square with df degrees of freedom
// (Wilson-Hilferty; z = the standard normal's upper quantile).
inline double chi2_critical(int df, double z) {
  const double d = df;
  const double a = 2.0 / (9.0 * d);
  return d * std::pow(1.0 - a + z * std::sqrt(a), 3);
}

// Pearson's statistic of `counts` against probabilities `probs` over n
// draws; cells expected below 5 are pooled into one. Returns (statistic, df).
inline std::pair<double, int> chi2(const std::map<int32_t, int64_t>& counts, const std::map<int32_t, double>& probs,
                                   int64_t n) {
  double stat = 0, pooled_e = 0, pooled_o = 0;
  int cells = 0;
  double mass = 0;
  for (const auto& [t, p] : probs) {
    mass += p;
    const double e = p * static_cast<double>(n);
    auto it = counts.find(t);
    const double o = it == counts.end() ? 0.0 : static_cast<double>(it->second);
    if (e < 5) {
      pooled_e += e;
      pooled_o += o;
    } else {
      stat += (o - e) * (o - e) / e;
      ++cells;
    }
  }
  for (const auto& [t, c] : counts) {
    if (probs.find(t) == probs.end()) pooled_o += static_cast<double>(c);  // outside the support
  }
  if (pooled_e > 0) {
    stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++cells;
  } else if (pooled_o > 0) {
    stat = INFINITY;  // a token of probability 0 was emitted
  }
  EXPECT_NEAR(mass, 1.0, 1e-6);
  return {stat, cells - 1};
}

// Writes a copy of the GGUF file `in` to `out` whose F32 weight matrices (2
// or more dimensions; norms and biases are kept) carry Gaussian noise of
// standard deviation `relative` x the matrix's RMS (fixed seed): a draft
// model that mostly agrees with the original but not always.
inline Status write_perturbed_copy(const std::string& in, const std::string& out, double relative, uint64_t seed) {
  TESSERA_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(in));
  GgufWriter w;
  for (const GgufKeyValue& kv : f.metadata()) w.add_value(kv.key, kv.value);
  std::mt19937_64 rng(seed);
  for (const GgufTensorInfo& t : f.tensors()) {
    if (!t.dtype) return invalid_argument(in + ": tensor " + t.name + " has a type tessera cannot copy");
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    if (*t.dtype == DType::kF32 && t.shape.size() >= 2) {
      auto* v = reinterpret_cast<float*>(bytes.data());
      const auto n = static_cast<size_t>(t.n_elements);
      double ss = 0;
      for (size_t i = 0; i < n; ++i) ss += static_cast<double>(v[i]) * v[i];
      std::normal_distribution<double> noise(0.0, relative * std::sqrt(ss / static_cast<double>(n)));
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(v[i] + noise(rng));
    }
    w.add_tensor(t.name, t.shape, *t.dtype, std::move(bytes));
  }
  return w.write(out);
}

}  // namespace tessera
