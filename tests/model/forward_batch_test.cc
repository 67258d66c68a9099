// The ragged forward pass: batched sequences equal the same sequences run
// alone, and chunked prefill equals token-by-token decoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/cpu_features.h"
#include "kv/block_table.h"
#include "model/micro_batch.h"
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

// A batch run as pipeline micro-batches, one after the other (as a stage runs
// them, model/micro_batch.h), equals the whole batch, including the
// sequences cut across micro-batches.
void check_micro_batches_equal_whole(const Model& m) {
  const std::vector<int> lens = {1, 7, 23, 40};
  const auto nv = static_cast<size_t>(m.config().n_vocab);
  std::vector<float> whole, parts;
  for (const bool split : {false, true}) {
    Harness h(m);
    std::vector<BlockTable> tables;
    ForwardBatch b;
    for (size_t s = 0; s < lens.size(); ++s) {
      tables.emplace_back(h.gen->kv_spec().block_size);
      ASSERT_TRUE(tables.back().reserve(lens[s], h.gen->block_pool()).ok());
    }
    for (size_t s = 0; s < lens.size(); ++s) {
      // Logits of every row of the odd sequences, of the last row of the others.
      b.append(tokens_for(static_cast<int>(s), lens[s], m.config().n_vocab), 0, lens[s], tables[s],
               s % 2 == 1 ? ForwardBatch::Logits::kAll : ForwardBatch::Logits::kLast);
    }
    std::vector<float> logits;
    if (!split) {
      ASSERT_TRUE(h.gen->transformer().forward(b, h.gen->kv(), whole).ok());
      continue;
    }
    const auto ranges = micro_batch_ranges(b.n_tokens(), 2, 8);
    ASSERT_EQ(ranges.size(), 8u);  // 71 rows: 8 ranges of 8 or 9 rows
    for (const auto& [begin, end] : ranges) {
      ASSERT_TRUE(h.gen->transformer().forward(slice_batch(b, begin, end), h.gen->kv(), logits).ok());
      parts.insert(parts.end(), logits.begin(), logits.end());
    }
  }
  ASSERT_EQ(parts.size(), whole.size());
  ASSERT_EQ(whole.size(), (1 + 7 + 1 + 40) * nv);
  for (size_t row = 0; row < whole.size() / nv; ++row) {
    const float* got = &parts[row * nv];
    const float* want = &whole[row * nv];
    EXPECT_LE(rel_diff(got, want, nv), 1e-6) << "logits row " << row;
    EXPECT_EQ(std::max_element(got, got + nv) - got, std::max_element(want, want + nv) - want);
  }
}

TEST(MicroBatch, RangesCutOnlyLargeBatchesOfSeveralStages) {
  using R = std::vector<std::pair<int32_t, int32_t>>;
  EXPECT_EQ(micro_batch_ranges(500, 1, 32), (R{{0, 500}}));  // one stage: never cut
  EXPECT_EQ(micro_batch_ranges(63, 2, 32), (R{{0, 63}}));    // below 2 x min rows
  EXPECT_EQ(micro_batch_ranges(100, 2, 32), (R{{0, 34}, {34, 67}, {67, 100}}));
  EXPECT_EQ(micro_batch_ranges(1000, 2, 32).size(), 8u);  // at most 4 per stage
  EXPECT_EQ(micro_batch_ranges(1000, 2, 0), (R{{0, 1000}}));
  EXPECT_EQ(micro_batch_ranges(0, 2, 32), (R{{0, 0}}));
}

TEST(MicroBatch, SliceKeepsEachRowsSequenceSlotsAndLogits) {
  BlockTable ta(16), tb(16);
  ta.append(3);
  tb.append(5);
  const std::vector<int32_t> a = {10, 11, 12, 13, 14}, b = {20, 21, 22};
  ForwardBatch fb;
  fb.append(a, 0, 5, ta, ForwardBatch::Logits::kAll);
  fb.append(b, 0, 3, tb, ForwardBatch::Logits::kLast);
  const ForwardBatch s = slice_batch(fb, 3, 7);  // a's rows 3..4, b's rows 0..1
  EXPECT_EQ(s.token_ids, (std::vector<int32_t>{13, 14, 20, 21}));
  EXPECT_EQ(s.positions, (std::vector<int32_t>{3, 4, 0, 1}));
  EXPECT_EQ(s.slot_mapping, (std::vector<int64_t>{3 * 16 + 3, 3 * 16 + 4, 5 * 16, 5 * 16 + 1}));
  ASSERT_EQ(s.seqs.size(), 2u);
  EXPECT_EQ(s.seqs[0].token_begin, 0);
  EXPECT_EQ(s.seqs[0].n_tokens, 2);
  EXPECT_EQ(s.seqs[1].token_begin, 2);
  EXPECT_EQ(s.seqs[1].n_tokens, 2);
  EXPECT_EQ(s.seqs[1].block_table.data(), tb.blocks().data());
  EXPECT_EQ(s.logits_rows, (std::vector<int32_t>{0, 1}));  // a's rows 3, 4; b's last row (7) is not in it
}

TEST(MicroBatch, StoriesMicroBatchesEqualTheWholeBatch) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  check_micro_batches_equal_whole(**m);
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
