// Paged attention with online softmax against a naive full-softmax
// reference, for MHA/GQA/MQA, several sequences, scattered blocks and every ISA.
#include "backend/cpu/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kv_buffer.h"
#include "core/dtype.h"
#include "core/fp8.h"
#include "core/quant_ref.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"

namespace tessera::cpu {
namespace {

struct Case {
  int n_heads, n_kv_heads, head_dim;
};

// Sequences: (cached tokens before this step, new tokens this step).
using SeqShape = std::vector<std::pair<int, int>>;
const SeqShape kShortSeqs = {{0, 1}, {0, 37}, {50, 1}, {20, 13}};

void run_case(const Case& c, Isa isa, KvDtype kv_dtype, const SeqShape& seqs = kShortSeqs, int num_blocks = 64,
              int32_t block_size = kDefaultKvBlockSize) {
  KvCacheSpec spec;
  spec.dtype = kv_dtype;
  spec.block_size = block_size;
  spec.n_layers = 2;
  spec.n_kv_heads = c.n_kv_heads;
  spec.head_dim = c.head_dim;
  spec.num_blocks = num_blocks;
  auto kv = KvBuffer::create(spec);
  ASSERT_TRUE(kv.ok());
  // K and V lie in huge-page memory (huge_page_memory.h): 2 MiB-aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*kv)->k(0, 0)) % (uintptr_t{2} << 20), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*kv)->v(0, 0)) % (uintptr_t{2} << 20), 0u);
  BlockPool pool(spec.num_blocks);
  (void)pool.allocate();  // shift ids so tables are not the identity
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int layer = 1;
  const int kv_row = c.n_kv_heads * c.head_dim;
  const int q_row = c.n_heads * c.head_dim;
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
          for (int j = 0; j < ctx; ++j)
            o += sc[static_cast<size_t>(j)] * vs[s][static_cast<size_t>(j * kv_row + kvh * c.head_dim + i)];
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
    for (KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kF32, KvDtype::kInt8, KvDtype::kFp8}) {
      // Groups of 1, 4, 6, 8 and 9 query heads per KV head (9: attn_qk_*_kt
      // in two head blocks).
      for (Case c : {Case{4, 4, 16}, Case{8, 2, 32}, Case{6, 1, 64}, Case{2, 2, 8}, Case{16, 2, 64}, Case{9, 1, 40}}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + kv_dtype_name(t) + " heads " + std::to_string(c.n_heads) + "/" +
                     std::to_string(c.n_kv_heads));
        run_case(c, isa, t);
      }
    }
  }
}

// Block sizes other than 16: 5 (tiles of 12 blocks, 60 positions, keys
// scored 5 at a time) and 48 (one block per tile, scored 16 keys at a
// time), over contexts that end inside a tile and a block.
TEST(PagedAttention, OtherBlockSizesMatchNaiveSoftmaxAttention) {
  const SeqShape seqs = {{0, 1}, {0, 70}, {121, 1}, {50, 13}};
  for (Isa isa : supported_isas()) {
    for (KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kInt8, KvDtype::kFp8}) {
      for (int32_t bs : {5, 48}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + kv_dtype_name(t) + " block size " + std::to_string(bs));
        run_case(Case{8, 2, 32}, isa, t, seqs, 160 / bs * 4 + 8, bs);
      }
    }
  }
}

// Rows longer than one split run (1024 positions, paged_attention.cc) are
// computed as several work items whose softmax states are merged: decode
// rows at 1024 (one run), 1025 (two) and 2501 positions (three, the last
// short), and a prefill chunk whose rows cross the 2048 boundary.
TEST(PagedAttention, LongRowsSplitIntoRunsMatchNaiveSoftmaxAttention) {
  const SeqShape seqs = {{1023, 1}, {1024, 1}, {2500, 1}, {2040, 9}};
  for (Isa isa : supported_isas()) {
    for (KvDtype t : {KvDtype::kF16, KvDtype::kInt8}) {
      for (Case c : {Case{8, 2, 32}, Case{6, 1, 64}, Case{16, 2, 64}}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + kv_dtype_name(t) + " heads " + std::to_string(c.n_heads) + "/" +
                     std::to_string(c.n_kv_heads));
        run_case(c, isa, t, seqs, 512);
      }
    }
  }
}

// Store then load of one KV row per dtype: the error stated by each format
// (f32 exact; f16 / bf16 half an ulp; int8 half a step of max|x| / 127 per
// head; fp8 E4M3 half an ulp of x / scale, i.e. 2^-4 relative, plus the
// subnormal step 2^-10 * scale).
// Two layers of 3 KV heads of 40 elements, 2 blocks.
KvCacheSpec small_spec() {
  KvCacheSpec spec;
  spec.n_layers = 2;
  spec.n_kv_heads = 3;
  spec.head_dim = 40;
  spec.num_blocks = 2;
  return spec;
}

TEST(KvBuffer, StoreLoadRoundTripErrorBounds) {
  KvCacheSpec spec = small_spec();
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  const int64_t n = int64_t{spec.n_kv_heads} * spec.head_dim;
  std::vector<float> k(static_cast<size_t>(n)), v(k.size()), k2(k.size()), v2(k.size());
  for (KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kF32, KvDtype::kInt8, KvDtype::kFp8}) {
    SCOPED_TRACE(kv_dtype_name(t));
    spec.dtype = t;
    auto buf = KvBuffer::create(spec);
    ASSERT_TRUE(buf.ok());
    for (auto& x : k) x = dist(rng);
    for (auto& x : v) x = dist(rng);
    v[5] = 0.0f;
    (*buf)->store(kernels(), 1, 17, k.data(), v.data());
    (*buf)->load(1, 17, k2.data(), v2.data());
    for (int h = 0; h < spec.n_kv_heads; ++h) {
      float amax = 0.0f;
      for (int i = 0; i < spec.head_dim; ++i)
        amax = std::max(amax, std::fabs(k[static_cast<size_t>(h * spec.head_dim + i)]));
      for (int i = 0; i < spec.head_dim; ++i) {
        const auto j = static_cast<size_t>(h * spec.head_dim + i);
        const float x = k[j];
        float bound = 0.0f;
        switch (t) {
          case KvDtype::kF32:
            bound = 0.0f;
            break;
          case KvDtype::kF16:
            bound = std::fabs(x) * 0x1p-11f + 0x1p-25f;
            break;
          case KvDtype::kBF16:
            bound = std::fabs(x) * 0x1p-8f;
            break;
          case KvDtype::kInt8:
            bound = 0.5f * amax / 127.0f * 1.0001f;
            break;
          case KvDtype::kFp8:
            bound = std::fabs(x) * 0x1p-4f + amax / 448.0f * 0x1p-10f;
            break;
        }
        ASSERT_LE(std::fabs(k2[j] - x), bound) << "head " << h << " dim " << i;
      }
    }
    EXPECT_EQ(v2[5], 0.0f);
  }
}

// K lies transposed within its block (kv_buffer.h) for every dtype but
// f32: slot s's element (head h, d) at k_block(layer, s / bs, h)[d * bs +
// s % bs] (16-bit: k_lanes), and for 8-bit K its scale at the head's
// [bs] scales after the values; the other slots of the block untouched
// (zero); V keeps rows. f32 keeps K in rows.
TEST(KvBuffer, KeysLieTransposedWithinTheirBlock) {
  KvCacheSpec spec = small_spec();
  spec.num_blocks = 3;
  const int64_t n = int64_t{spec.n_kv_heads} * spec.head_dim;
  const int64_t bs = spec.block_size;
  std::vector<float> k(static_cast<size_t>(n)), v(k.size());
  for (int64_t i = 0; i < n; ++i) {
    k[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i + 1);  // exact in f16 and bf16
    v[static_cast<size_t>(i)] = -0.5f * static_cast<float>(i + 1);
  }
  const float* fp8 = fp8_e4m3_table();
  for (KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kF32, KvDtype::kInt8, KvDtype::kFp8}) {
    SCOPED_TRACE(kv_dtype_name(t));
    spec.dtype = t;
    auto buf = KvBuffer::create(spec);
    ASSERT_TRUE(buf.ok());
    ASSERT_EQ((*buf)->keys_in_lanes(), t != KvDtype::kF32);
    const int64_t slot = bs + 5;  // block 1, lane 5
    (*buf)->store(kernels(), 1, slot, k.data(), v.data());
    if (t == KvDtype::kF32) continue;
    const bool eight = t == KvDtype::kInt8 || t == KvDtype::kFp8;
    for (int h = 0; h < spec.n_kv_heads; ++h) {
      const uint8_t* kb = (*buf)->k_block(1, 1, h);
      float amax = 0.0f;
      for (int d = 0; d < spec.head_dim; ++d) amax = std::max(amax, k[static_cast<size_t>(h * spec.head_dim + d)]);
      for (int64_t o = 0; o < bs; ++o) {
        float scale = 1.0f;
        if (eight) std::memcpy(&scale, kb + spec.head_dim * bs + o * 4, sizeof(float));
        if (eight && o != 5) {
          ASSERT_EQ(scale, 0.0f) << "head " << h << " lane " << o;
        }
        for (int d = 0; d < spec.head_dim; ++d) {
          const float want = o == 5 ? k[static_cast<size_t>(h * spec.head_dim + d)] : 0.0f;
          float got;
          if (!eight) {
            uint16_t e;
            std::memcpy(&e, kb + (d * bs + o) * static_cast<int64_t>(sizeof(uint16_t)), sizeof(e));
            got = t == KvDtype::kF16 ? fp16_to_fp32(e) : bf16_to_fp32(e);
            ASSERT_EQ(got, want) << "head " << h << " dim " << d << " lane " << o;
            continue;
          }
          const uint8_t e = kb[d * bs + o];
          got = scale * (t == KvDtype::kInt8 ? static_cast<float>(static_cast<int8_t>(e)) : fp8[e]);
          // Quantization error: half a step (int8) or 2^-4 relative (E4M3).
          const float bound = t == KvDtype::kInt8 ? 0.5f * amax / 127.0f * 1.0001f : std::fabs(want) * 0x1p-4f;
          ASSERT_LE(std::fabs(got - want), bound) << "head " << h << " dim " << d << " lane " << o;
          if (o != 5) {
            ASSERT_EQ(e, 0) << "head " << h << " dim " << d << " lane " << o;
          }
        }
      }
    }
    if (eight) continue;
    const auto* vrow = static_cast<const uint16_t*>((*buf)->v(1, slot));
    for (int64_t i = 0; i < n; ++i) {
      const float got = t == KvDtype::kF16 ? fp16_to_fp32(vrow[i]) : bf16_to_fp32(vrow[i]);
      ASSERT_EQ(got, v[static_cast<size_t>(i)]) << "value " << i;
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
