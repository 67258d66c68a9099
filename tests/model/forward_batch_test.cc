// The ragged forward pass: batched sequences equal the same sequences run
// alone, and chunked prefill equals token-by-token decoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kv/block_table.h"
#include "core/cpu_features.h"
#include "model_test_util.h"
#include "test_support.h"

namespace tessera {
namespace {

// max |a - b| / max |b|.
double rel_diff(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num = std::max(num, static_cast<double>(std::fabs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::fabs(b[i])));
  }
  return den == 0 ? num : num / den;
}

std::vector<int32_t> tokens_for(int seq, int len, int n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(len));
  for (int i = 0; i < len; ++i) t[static_cast<size_t>(i)] = (seq * 131 + i * 17 + 5) % n_vocab;
  return t;
}

struct Harness {
  std::unique_ptr<testing::GraphHarness> gen;
  explicit Harness(const Model& m, Isa isa = best_isa()) {
    auto g = testing::GraphHarness::create(m, testing::cpu_backend(2, isa), 1024);
    EXPECT_TRUE(g.ok());
    gen = std::move(g).value();
  }
};

// Appends tokens [begin, end) of one sequence to `b`, logits for every row.
void append_seq(ForwardBatch& b, const std::vector<int32_t>& toks, int begin, int end, const BlockTable& table) {
  b.append(toks, begin, end, table, ForwardBatch::Logits::kAll);
}

// Runs each sequence alone, then all together in one call (in a fresh cache
// whose blocks are handed out in another order), and compares every row.
void check_batch_equals_alone(const Model& m) {
  const std::vector<int> lens = {1, 7, 23, 40};
  const int n_vocab = m.config().n_vocab;
  const auto nv = static_cast<size_t>(n_vocab);
  std::vector<std::vector<float>> alone;
  {
    Harness h(m);
    for (size_t s = 0; s < lens.size(); ++s) {
      const auto toks = tokens_for(static_cast<int>(s), lens[s], n_vocab);
      BlockTable table(h.gen->kv_spec().block_size);
      ASSERT_TRUE(table.reserve(lens[s], h.gen->block_pool()).ok());
      ForwardBatch b;
      append_seq(b, toks, 0, lens[s], table);
      std::vector<float> logits;
      ASSERT_TRUE(h.gen->transformer().forward(b, h.gen->kv(), logits).ok());
      alone.push_back(logits);
      table.release_all(h.gen->block_pool());
    }
  }
  Harness h(m);
  std::vector<BlockTable> tables;
  auto dummy = *h.gen->block_pool().allocate();  // shift block ids relative to the solo runs
  (void)dummy;
  for (size_t s = lens.size(); s-- > 0;) {
    tables.emplace_back(h.gen->kv_spec().block_size);
    ASSERT_TRUE(tables.back().reserve(lens[s], h.gen->block_pool()).ok());
  }
  std::reverse(tables.begin(), tables.end());
  ForwardBatch b;
  for (size_t s = 0; s < lens.size(); ++s)
    append_seq(b, tokens_for(static_cast<int>(s), lens[s], n_vocab), 0, lens[s], tables[s]);
  std::vector<float> logits;
  ASSERT_TRUE(h.gen->transformer().forward(b, h.gen->kv(), logits).ok());
  size_t row = 0;
  for (size_t s = 0; s < lens.size(); ++s) {
    for (int t = 0; t < lens[s]; ++t, ++row) {
      const float* got = &logits[row * nv];
      const float* want = &alone[s][static_cast<size_t>(t) * nv];
      EXPECT_LE(rel_diff(got, want, nv), 1e-5) << "seq " << s << " token " << t;
      EXPECT_EQ(std::max_element(got, got + nv) - got, std::max_element(want, want + nv) - want);
    }
  }
}

// Feeds `toks` in one prefill call and one token at a time; the last logits agree.
void check_prefill_equals_decode(const Model& m) {
  const auto toks = tokens_for(3, 37, m.config().n_vocab);
  Harness h(m);
  auto whole = h.gen->prefill_logits(toks, 1024);
  auto step = h.gen->prefill_logits(toks, 1);
  auto chunked = h.gen->prefill_logits(toks, 5);
  ASSERT_TRUE(whole.ok() && step.ok() && chunked.ok());
  EXPECT_LE(rel_diff(step->data(), whole->data(), whole->size()), 1e-4);
  EXPECT_LE(rel_diff(chunked->data(), whole->data(), whole->size()), 1e-4);
}

// A decode step of one sequence mixed with a prefill chunk of another equals each alone.
void check_mixed_prefill_and_decode(const Model& m) {
  const int n_vocab = m.config().n_vocab;
  const auto nv = static_cast<size_t>(n_vocab);
  const auto a = tokens_for(1, 12, n_vocab);
  const auto b = tokens_for(2, 9, n_vocab);
  Harness h(m);
  auto a_alone = h.gen->prefill_logits(a, 11);  // last call: token 11 alone (decode)
  auto b_alone = h.gen->prefill_logits(b, 9);
  ASSERT_TRUE(a_alone.ok() && b_alone.ok());
  BlockTable ta(h.gen->kv_spec().block_size), tb(h.gen->kv_spec().block_size);
  ASSERT_TRUE(ta.reserve(12, h.gen->block_pool()).ok());
  ASSERT_TRUE(tb.reserve(9, h.gen->block_pool()).ok());
  std::vector<float> logits;
  ForwardBatch first;  // a's first 11 tokens
  append_seq(first, a, 0, 11, ta);
  ASSERT_TRUE(h.gen->transformer().forward(first, h.gen->kv(), logits).ok());
  ForwardBatch mixed;  // a decodes token 11 while b prefills 9 tokens
  append_seq(mixed, a, 11, 12, ta);
  append_seq(mixed, b, 0, 9, tb);
  ASSERT_TRUE(h.gen->transformer().forward(mixed, h.gen->kv(), logits).ok());
  EXPECT_LE(rel_diff(&logits[0], a_alone->data(), nv), 1e-5);
  EXPECT_LE(rel_diff(&logits[9 * nv], b_alone->data(), nv), 1e-5);
}

RandomModelShape shape(const char* name, int heads, int kv_heads) {
  RandomModelShape s;
  s.name = name;
  s.n_vocab = 300;
  s.n_embd = 64;
  s.n_layers = 2;
  s.n_ff = 96;
  s.n_heads = heads;
  s.n_kv_heads = kv_heads;
  return s;
}

TEST(ForwardBatch, Stories260K) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  check_batch_equals_alone(**m);
  check_prefill_equals_decode(**m);
  check_mixed_prefill_and_decode(**m);
}

TEST(ForwardBatch, RandomModelsEveryHeadLayoutAndDtype) {
  for (auto s : {shape("mha", 4, 4), shape("gqa", 8, 2), shape("mqa", 4, 1)}) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      SCOPED_TRACE(s.name + " " + dtype_name(t));
      auto m = testing::load_random_model(s, t, 7);
      ASSERT_NE(m, nullptr);
      check_batch_equals_alone(*m);
      check_prefill_equals_decode(*m);
      check_mixed_prefill_and_decode(*m);
    }
  }
}

TEST(ForwardBatch, RejectsInvalidBatches) {
  auto m = testing::load_random_model(shape("tiny", 4, 2), DType::kF32, 1);
  ASSERT_NE(m, nullptr);
  Harness h(*m);
  BlockTable table(h.gen->kv_spec().block_size);
  ASSERT_TRUE(table.reserve(4, h.gen->block_pool()).ok());
  std::vector<float> logits;
  ForwardBatch b;
  append_seq(b, {1, 2, 3}, 0, 3, table);
  b.token_ids[1] = 300;  // outside the vocabulary
  EXPECT_EQ(h.gen->transformer().forward(b, h.gen->kv(), logits).code(), StatusCode::kInvalidArgument);
  b.token_ids[1] = 2;
  b.positions[2] = 16;  // beyond the block table
  EXPECT_EQ(h.gen->transformer().forward(b, h.gen->kv(), logits).code(), StatusCode::kInvalidArgument);
  b.positions[2] = 2;
  b.logits_rows.push_back(3);
  EXPECT_EQ(h.gen->transformer().forward(b, h.gen->kv(), logits).code(), StatusCode::kInvalidArgument);
  b.logits_rows.pop_back();
  EXPECT_TRUE(h.gen->transformer().forward(b, h.gen->kv(), logits).ok());
  EXPECT_EQ(h.gen->transformer().forward(ForwardBatch{}, h.gen->kv(), logits).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
