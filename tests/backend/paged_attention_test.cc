// Paged attention with online softmax against a naive full-softmax
// reference, for MHA/GQA/MQA, several sequences, scattered blocks and every ISA.
#include "backend/cpu/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/quant_ref.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"

namespace tessera::cpu {
namespace {

struct Case {
  int n_heads, n_kv_heads, head_dim;
};

void run_case(const Case& c, Isa isa, KvDtype kv_dtype) {
  KvCacheSpec spec;
  spec.dtype = kv_dtype;
  spec.n_layers = 2;
  spec.n_kv_heads = c.n_kv_heads;
  spec.head_dim = c.head_dim;
  spec.num_blocks = 64;
  auto kv = KvBuffer::create(spec);
  ASSERT_TRUE(kv.ok());
  BlockPool pool(spec.num_blocks);
  (void)pool.allocate();  // shift ids so tables are not the identity
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int layer = 1;
  const int kv_row = c.n_kv_heads * c.head_dim;
  const int q_row = c.n_heads * c.head_dim;
  // Sequences: (cached tokens before this step, new tokens this step).
  const std::vector<std::pair<int, int>> seqs = {{0, 1}, {0, 37}, {50, 1}, {20, 13}};
  std::vector<BlockTable> tables;
  std::vector<AttentionSeq> aseqs;
  std::vector<int32_t> positions;
  // reference copies of the (f16-rounded) K/V per sequence: [ctx, kv_row]
  std::vector<std::vector<float>> ks, vs;
  int32_t row = 0;
  for (auto [cached, fresh] : seqs) {
    BlockTable t(spec.block_size);
    ASSERT_TRUE(t.reserve(cached + fresh, pool).ok());
    std::vector<float> k(static_cast<size_t>((cached + fresh) * kv_row)), v(k.size());
    std::vector<float> krow(static_cast<size_t>(kv_row)), vrow(krow.size());
    for (int p = 0; p < cached + fresh; ++p) {
      for (int i = 0; i < kv_row; ++i) {
        krow[static_cast<size_t>(i)] = dist(rng);
        vrow[static_cast<size_t>(i)] = dist(rng);
      }
      (*kv)->store(kernels_for(isa), layer, t.slot(p), krow.data(), vrow.data());
      // The reference reads back what the cache holds (rounded to its dtype).
      (*kv)->load(layer, t.slot(p), &k[static_cast<size_t>(p * kv_row)], &v[static_cast<size_t>(p * kv_row)]);
      if (p >= cached) positions.push_back(p);
    }
    ks.push_back(std::move(k));
    vs.push_back(std::move(v));
    tables.push_back(std::move(t));
    aseqs.push_back({row, fresh, {}});
    row += fresh;
  }
  for (size_t s = 0; s < seqs.size(); ++s) aseqs[s].block_table = tables[s].blocks();
  std::vector<float> q(static_cast<size_t>(row * q_row));
  for (auto& x : q) x = dist(rng);
  std::vector<float> out(q.size(), -1.0f);
  const AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  ThreadPool tp(3);
  paged_attention(tp, kernels_for(isa), shape, q.data(), positions.data(), aseqs, **kv, layer, out.data());

  const int group = c.n_heads / c.n_kv_heads;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int t = aseqs[s].token_begin; t < aseqs[s].token_begin + aseqs[s].n_tokens; ++t) {
      const int ctx = positions[static_cast<size_t>(t)] + 1;
      for (int h = 0; h < c.n_heads; ++h) {
        const int kvh = h / group;
        std::vector<double> sc(static_cast<size_t>(ctx));
        double mx = -1e300;
        for (int j = 0; j < ctx; ++j) {
          double d = 0;
          for (int i = 0; i < c.head_dim; ++i) {
            d += static_cast<double>(q[static_cast<size_t>(t * q_row + h * c.head_dim + i)]) *
                 ks[s][static_cast<size_t>(j * kv_row + kvh * c.head_dim + i)];
          }
          sc[static_cast<size_t>(j)] = d * shape.scale;
          mx = std::max(mx, sc[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (double& x : sc) sum += x = std::exp(x - mx);
        for (int i = 0; i < c.head_dim; ++i) {
          double o = 0;
          for (int j = 0; j < ctx; ++j) o += sc[static_cast<size_t>(j)] * vs[s][static_cast<size_t>(j * kv_row + kvh * c.head_dim + i)];
          o /= sum;
          EXPECT_NEAR(out[static_cast<size_t>(t * q_row + h * c.head_dim + i)], o, 2e-5 * 2.0)
              << "seq " << s << " token " << t << " head " << h << " dim " << i;
        }
      }
    }
  }
}

TEST(PagedAttention, MatchesNaiveSoftmaxAttention) {
  for (Isa isa : supported_isas()) {
    for (KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kF32, KvDtype::kInt8}) {
      for (Case c : {Case{4, 4, 16}, Case{8, 2, 32}, Case{6, 1, 64}, Case{2, 2, 8}}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + kv_dtype_name(t) + " heads " + std::to_string(c.n_heads) + "/" +
                     std::to_string(c.n_kv_heads));
        run_case(c, isa, t);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
