// Every kernel table entry on every supported ISA against the scalar path,
// and the scalar path against core/quant_ref plus double-precision formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/dtype.h"
#include "core/fp8.h"
#include "core/quant_ref.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

using testing::isa_label;
using testing::random_floats;

const std::vector<int64_t> kFloatSizes = {1, 7, 8, 15, 16, 31, 32, 33, 64, 65, 100, 4096};
const std::vector<int64_t> kQuantSizes = {32, 64, 96, 160, 4096};

// A weight row of dtype t, its f32 dequantization, and the row bytes.
struct Row {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

Row make_row(DType t, const std::vector<float>& src) {
  const int64_t n = static_cast<int64_t>(src.size());
  Row r;
  r.bytes.resize(dtype_row_bytes(t, n));
  quantize_row(t, src.data(), r.bytes.data(), n);
  r.values.resize(src.size());
  dequantize_row(t, r.bytes.data(), r.values.data(), n);
  return r;
}

struct DotRef {
  double dot = 0;
  double abs = 0;  // sum |w * x|: the scale of f32 rounding error
};

DotRef dot_ref(const std::vector<float>& w, const std::vector<float>& x) {
  DotRef r;
  for (size_t i = 0; i < w.size(); ++i) {
    r.dot += static_cast<double>(w[i]) * x[i];
    r.abs += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
  return r;
}

// Calls the table's dot for dtype t (activations quantized for Q8_0/Q4_0).
float call_dot(const Kernels& k, DType t, const Row& w, const std::vector<float>& x, const std::vector<uint8_t>& xq) {
  const auto n = static_cast<int64_t>(x.size());
  switch (t) {
    case DType::kF32:
      return k.dot_f32(reinterpret_cast<const float*>(w.bytes.data()), x.data(), n);
    case DType::kF16:
      return k.dot_f16(reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), n);
    case DType::kBF16:
      return k.dot_bf16(reinterpret_cast<const uint16_t*>(w.bytes.data()), x.data(), n);
    case DType::kQ8_0:
      return k.dot_q8_0(reinterpret_cast<const BlockQ8_0*>(w.bytes.data()),
                        reinterpret_cast<const BlockQ8_0*>(xq.data()), n);
    case DType::kQ4_0:
      return k.dot_q4_0(reinterpret_cast<const BlockQ4_0*>(w.bytes.data()),
                        reinterpret_cast<const BlockQ8_0*>(xq.data()), n);
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ8_K:
      break;  // quant_kernels_test.cc
  }
  return 0;
}

// Dot products: scalar vs dequantize + double dot, every ISA vs scalar.
// Tolerance 1e-5 * sum|w*x|: a few hundred f32 roundings of partial sums.
TEST(CpuKernels, DotProducts) {
  const DType types[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};
  const Kernels& ref = kernels_for(Isa::kScalar);
  uint32_t seed = 1;
  for (DType t : types) {
    const bool quant = t == DType::kQ8_0 || t == DType::kQ4_0;
    for (int64_t n : quant ? kQuantSizes : kFloatSizes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
      const Row w = make_row(t, random_floats(n, seed++));
      std::vector<float> x = random_floats(n, seed++, 3.0f);
      std::vector<uint8_t> xq;
      if (quant) {
        xq.resize(dtype_row_bytes(DType::kQ8_0, n));
        quantize_row_q8_0_ref(x.data(), reinterpret_cast<BlockQ8_0*>(xq.data()), n);
        dequantize_row_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(xq.data()), x.data(), n);
      }
      const DotRef expect = dot_ref(w.values, x);
      const double tol = 1e-5 * expect.abs + 1e-30;
      const float scalar = call_dot(ref, t, w, x, xq);
      EXPECT_NEAR(scalar, expect.dot, tol);
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_label(isa));
        EXPECT_NEAR(call_dot(kernels_for(isa), t, w, x, xq), scalar, tol);
      }
    }
  }
}

// Calls the table's dot_rows for dtype t on kDotRows rows `stride` bytes apart.
void call_dot_rows(const Kernels& k, DType t, const uint8_t* w, int64_t stride, const std::vector<float>& x,
                   const std::vector<uint8_t>& xq, float* out) {
  const auto n = static_cast<int64_t>(x.size());
  const auto* q = reinterpret_cast<const BlockQ8_0*>(xq.data());
  switch (t) {
    case DType::kF32:
      return k.dot_rows_f32(reinterpret_cast<const float*>(w), stride, x.data(), n, out);
    case DType::kF16:
      return k.dot_rows_f16(reinterpret_cast<const uint16_t*>(w), stride, x.data(), n, out);
    case DType::kBF16:
      return k.dot_rows_bf16(reinterpret_cast<const uint16_t*>(w), stride, x.data(), n, out);
    case DType::kQ8_0:
      return k.dot_rows_q8_0(reinterpret_cast<const BlockQ8_0*>(w), stride, q, n, out);
    case DType::kQ4_0:
      return k.dot_rows_q4_0(reinterpret_cast<const BlockQ4_0*>(w), stride, q, n, out);
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ8_K:
      break;  // single-row kernels only (quant_kernels_test.cc)
  }
}

// dot_rows must give bit-identical results to the single-row dot (matmul's
// batch invariance rests on it), for rows with padding between them.
TEST(CpuKernels, DotRowsBitIdenticalToDot) {
  const DType types[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};
  uint32_t seed = 500;
  for (DType t : types) {
    const bool quant = t == DType::kQ8_0 || t == DType::kQ4_0;
    for (int64_t n : quant ? kQuantSizes : kFloatSizes) {
      const size_t row_bytes = dtype_row_bytes(t, n);
      const auto stride = static_cast<int64_t>(row_bytes + 2 * dtype_block_bytes(t));  // padded rows
      std::vector<uint8_t> w(static_cast<size_t>(stride) * kDotRows);
      std::vector<Row> rows;
      for (int r = 0; r < kDotRows; ++r) {
        rows.push_back(make_row(t, random_floats(n, seed++)));
        std::memcpy(w.data() + r * stride, rows.back().bytes.data(), row_bytes);
      }
      const std::vector<float> x = random_floats(n, seed++, 2.0f);
      std::vector<uint8_t> xq(dtype_row_bytes(DType::kQ8_0, quant ? n : 0));
      if (quant) quantize_row_q8_0_ref(x.data(), reinterpret_cast<BlockQ8_0*>(xq.data()), n);
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n) + " " + isa_label(isa));
        const Kernels& k = kernels_for(isa);
        float out[kDotRows];
        call_dot_rows(k, t, w.data(), stride, x, xq, out);
        for (int r = 0; r < kDotRows; ++r) {
          const float single = call_dot(k, t, rows[static_cast<size_t>(r)], x, xq);
          EXPECT_EQ(std::bit_cast<uint32_t>(out[r]), std::bit_cast<uint32_t>(single)) << "row " << r;
        }
      }
    }
  }
}

// Values whose x * id lands exactly on .5 or just below it, zero blocks,
// tiny blocks with a subnormal f16 scale, and huge values.
std::vector<float> tricky_quant_input() {
  std::vector<float> x(32 * 5, 0.0f);
  // Block 0: amax 127 gives d = 1, id = 1; ties must round away from zero.
  const float ties[] = {127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 0.49999997f, -0.49999997f, 126.5f, -126.5f};
  for (size_t i = 0; i < std::size(ties); ++i) x[i] = ties[i];
  // Block 1 stays all zero (d = 0, id = 0).
  for (int i = 0; i < 32; ++i) x[64 + i] = 1e-6f * static_cast<float>(i - 16);  // subnormal f16 d
  for (int i = 0; i < 32; ++i) x[96 + i] = 6e4f * std::sin(static_cast<float>(i));
  for (int i = 0; i < 32; ++i) x[128 + i] = static_cast<float>(i) - 15.5f;
  return x;
}

TEST(CpuKernels, QuantizeRowQ8_0IsBitIdenticalToReference) {
  std::vector<std::vector<float>> inputs = {tricky_quant_input()};
  for (int64_t n : kQuantSizes) inputs.push_back(random_floats(n, static_cast<uint32_t>(n), 0.7f));
  for (const auto& x : inputs) {
    const auto n = static_cast<int64_t>(x.size());
    std::vector<BlockQ8_0> expect(static_cast<size_t>(n / 32));
    quantize_row_q8_0_ref(x.data(), expect.data(), n);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      std::vector<BlockQ8_0> got(expect.size());
      kernels_for(isa).quantize_row_q8_0(x.data(), got.data(), n);
      for (size_t b = 0; b < got.size(); ++b) {
        ASSERT_EQ(got[b].d, expect[b].d) << "block " << b;
        ASSERT_EQ(0, std::memcmp(got[b].qs, expect[b].qs, 32)) << "block " << b;
      }
    }
  }
}

TEST(CpuKernels, F32ToF16RowMatchesCoreConversion) {
  std::vector<float> x = random_floats(4096, 7, 100.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            65504.0f,
                            65519.0f,
                            65520.0f,
                            -65520.0f,
                            1e-8f,
                            5.96e-8f,
                            2.98e-8f,
                            6.1e-5f,
                            -3.1e-5f,
                            1.0009765625f,
                            1.00048828125f,
                            1.00146484375f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::bit_cast<float>(0x7f800001u),
                            std::bit_cast<float>(0xffc12345u)};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 3] = specials[i];
  for (Isa isa : supported_isas()) {
    for (int64_t n : kFloatSizes) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      std::vector<uint16_t> got(static_cast<size_t>(n));
      kernels_for(isa).f32_to_f16_row(x.data(), got.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], fp32_to_fp16(x[i])) << "i=" << i << " x=" << x[i];
    }
  }
}

TEST(CpuKernels, AxpyF16AndScale) {
  for (int64_t n : kFloatSizes) {
    const std::vector<float> vf = random_floats(n, 11);
    std::vector<uint16_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = fp32_to_fp16(vf[i]);
    const std::vector<float> y0 = random_floats(n, 12);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      std::vector<float> y = y0;
      kernels_for(isa).axpy_f16(0.37f, v.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double e = y0[i] + 0.37 * fp16_to_fp32(v[i]);
        EXPECT_NEAR(y[i], e, 1e-6 * (std::fabs(y0[i]) + std::fabs(0.37 * fp16_to_fp32(v[i]))) + 1e-30);
      }
      y = y0;
      kernels_for(isa).scale(y.data(), -1.25f, n);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], y0[i] * -1.25f);  // one rounding: exact match
    }
  }
}

// The ISAs on this CPU whose kernel table has `member`, a kernel some tables
// leave null (their callers then take a per-row fallback).
template <typename Fn>
std::vector<Isa> isas_with(Fn Kernels::*member) {
  std::vector<Isa> out;
  for (Isa isa : supported_isas()) {
    if (kernels_for(isa).*member != nullptr) out.push_back(isa);
  }
  return out;
}

// Per-head factors of the online softmax's rescale for the P·V tests: 1 (the
// maximum did not move), 0 (nothing seen before) and one in between.
std::vector<float> rescale_factors(int heads) {
  std::vector<float> r(static_cast<size_t>(heads));
  for (int g = 0; g < heads; ++g) r[static_cast<size_t>(g)] = g % 3 == 0 ? 1.0f : g % 3 == 1 ? 0.0f : 0.3f;
  return r;
}

// attn_pv_f16 gives, per head, the bits of the scale + axpy_f16 loop it
// replaces (head counts around the 4-head register block, hd around the
// 64-element step and its masked tail, strided rows as in the KV cache, in
// blocks of 16 or 7 rows each its own allocation, as a tile's KV blocks),
// without a rescale and with one (factors of 1, 0 and in between, as the
// online softmax gives).
TEST(CpuKernels, AttnPvF16MatchesAxpyLoop) {
  const std::vector<Isa> isas = isas_with(&Kernels::attn_pv_f16);
  if (isas.empty()) GTEST_SKIP() << "no table on this CPU has attn_pv_f16";
  for (Isa isa : isas) {
    const Kernels& k = kernels_for(isa);
    for (int heads : {1, 2, 3, 4, 5, 8, 9}) {
      for (int64_t hd : {1, 16, 40, 64, 80, 128, 130}) {
        for (int n : {0, 1, 7, 16, 40, 64}) {
          for (int v_rows : {16, 7}) {
            SCOPED_TRACE(isa_label(isa) + " heads=" + std::to_string(heads) + " hd=" + std::to_string(hd) +
                         " n=" + std::to_string(n) + " v_rows=" + std::to_string(v_rows));
            const int64_t v_row = 3 * hd + 5;  // elements between value rows (other KV heads in between)
            const int64_t p_stride = n + 3, out_stride = hd + 7;
            const auto seed = static_cast<uint32_t>(heads * 1000 + hd * 10 + n + v_rows * 100000);
            const int n_blocks = std::max(1, (n + v_rows - 1) / v_rows);
            std::vector<std::vector<uint16_t>> blocks(static_cast<size_t>(n_blocks));
            std::vector<const uint16_t*> v(blocks.size());
            for (int b = 0; b < n_blocks; ++b) {
              const std::vector<float> vf = random_floats(v_rows * v_row, seed + 10 + static_cast<uint32_t>(b));
              for (float x : vf) blocks[static_cast<size_t>(b)].push_back(fp32_to_fp16(x));
              v[static_cast<size_t>(b)] = blocks[static_cast<size_t>(b)].data();
            }
            auto row = [&](int j) { return v[static_cast<size_t>(j / v_rows)] + (j % v_rows) * v_row; };
            std::vector<float> p = random_floats(heads * p_stride, seed + 1);
            for (float& x : p) x = std::fabs(x);  // softmax weights
            const std::vector<float> out0 = random_floats(heads * out_stride, seed + 2);
            const std::vector<float> rescale = rescale_factors(heads);
            for (bool with_rescale : {false, true}) {
              std::vector<float> want = out0, got = out0;
              for (int g = 0; g < heads; ++g) {
                if (with_rescale) k.scale(want.data() + g * out_stride, rescale[static_cast<size_t>(g)], hd);
                for (int j = 0; j < n; ++j) k.axpy_f16(p[g * p_stride + j], row(j), want.data() + g * out_stride, hd);
              }
              k.attn_pv_f16(p.data(), p_stride, heads, v.data(), v_rows, v_row * static_cast<int64_t>(sizeof(uint16_t)),
                            n, got.data(), out_stride, hd, with_rescale ? rescale.data() : nullptr);
              ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                  << "rescale " << with_rescale;
            }
          }
        }
      }
    }
  }
}

// Attention scores s[heads rows of s_stride] against double-precision dot
// products of q[heads, hd] with key(j, i), key j's element i: each within
// tol(hd) * sum |q_i * key_i|, and past n the -7 the caller filled in.
template <typename Key>
void check_scores(const std::vector<float>& s, int64_t s_stride, const std::vector<float>& q, int heads, int64_t hd,
                  int n, Key key, double tol) {
  for (int g = 0; g < heads; ++g) {
    for (int j = 0; j < s_stride; ++j) {
      const float got = s[static_cast<size_t>(g * s_stride + j)];
      if (j >= n) {
        ASSERT_EQ(got, -7.0f) << "wrote past n: head " << g << " key " << j;
        continue;
      }
      double dot = 0, mag = 0;
      for (int64_t i = 0; i < hd; ++i) {
        const double prod = static_cast<double>(q[static_cast<size_t>(g * hd + i)]) * key(j, i);
        dot += prod;
        mag += std::fabs(prod);
      }
      ASSERT_NEAR(got, dot, tol * mag + 1e-30) << "head " << g << " key " << j;
    }
  }
}

// q [heads, hd] transposed to the [hd, heads] the attn_qk_*_kt kernels take.
std::vector<float> transpose_q(const std::vector<float>& q, int heads, int64_t hd) {
  std::vector<float> qt(q.size());
  for (int g = 0; g < heads; ++g) {
    for (int64_t d = 0; d < hd; ++d) qt[static_cast<size_t>(d * heads + g)] = q[static_cast<size_t>(g * hd + d)];
  }
  return qt;
}

// Runs score(kernels, s) for every table (false: the table lacks the
// kernel), s [heads, s_stride] prefilled with -7, checks each table's scores
// against double precision (check_scores with `key` and `tol`) and that the
// tables agree bit for bit. Returns how many tables ran.
template <typename Score, typename Key>
int kt_scores_agree(Score score, const std::vector<float>& q, int heads, int64_t hd, int n, int64_t s_stride, Key key,
                    double tol) {
  int tables = 0;
  std::vector<float> first;  // the first table's scores
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_label(isa));
    std::vector<float> s(static_cast<size_t>(heads * s_stride), -7.0f);
    if (!score(kernels_for(isa), s)) continue;
    ++tables;
    check_scores(s, s_stride, q, heads, hd, n, key, tol);
    if (::testing::Test::HasFatalFailure()) return tables;
    if (first.empty()) {
      first = s;
    } else {
      EXPECT_EQ(0, std::memcmp(first.data(), s.data(), s.size() * sizeof(float)));
    }
  }
  return tables;
}

// attn_qk_f16_kt / attn_qk_bf16_kt (keys transposed, as KvBuffer stores
// 16-bit K) against double-precision dot products: head counts around the
// 8-head blocks, hd with and without 8- and 16-element tails, every n up to
// 9 and 16, a key stride other than 16; scores past n untouched. The bound
// is the worst case of one FMA chain of hd terms (|error| <= hd * 2^-24 *
// sum |q_d k_d|, Higham 2002, 3.1), and every table gives the same bits
// (kernels.h).
TEST(CpuKernels, AttnQkKtMatchesDoublePrecisionAndAgreesAcrossTables) {
  int tables = 0;
  for (bool bf16 : {false, true}) {
    for (int heads : {1, 5, 8, 9, 16}) {
      for (int64_t hd : {int64_t{1}, int64_t{12}, int64_t{40}, int64_t{64}, int64_t{100}, int64_t{256}}) {
        for (int n = 1; n <= kAttnKeys; n += (n < 9 ? 1 : 7)) {
          SCOPED_TRACE(std::string(bf16 ? "bf16" : "f16") + " heads=" + std::to_string(heads) +
                       " hd=" + std::to_string(hd) + " n=" + std::to_string(n));
          const int64_t kt_stride = 19;  // elements between a key's elements (keys j < n, then other slots)
          const int64_t s_stride = kAttnKeys + 3;
          const auto seed = static_cast<uint32_t>(heads * 10000 + hd * 20 + n + (bf16 ? 7 : 0));
          const std::vector<float> kf = random_floats(hd * kt_stride, seed);
          std::vector<uint16_t> keys_t(kf.size());  // [hd, kt_stride]: element d of key j at d * kt_stride + j
          for (size_t i = 0; i < kf.size(); ++i) keys_t[i] = bf16 ? fp32_to_bf16(kf[i]) : fp32_to_fp16(kf[i]);
          auto key = [&](int j, int64_t d) {
            const uint16_t v = keys_t[static_cast<size_t>(d * kt_stride + j)];
            return static_cast<double>(bf16 ? bf16_to_fp32(v) : fp16_to_fp32(v));
          };
          const std::vector<float> q = random_floats(heads * hd, seed + 1, 2.0f);
          const std::vector<float> qt = transpose_q(q, heads, hd);
          auto score = [&](const Kernels& k, std::vector<float>& s) {
            const auto kt = bf16 ? k.attn_qk_bf16_kt : k.attn_qk_f16_kt;
            if (kt != nullptr) kt(qt.data(), heads, keys_t.data(), kt_stride, n, hd, s.data(), s_stride);
            return kt != nullptr;
          };
          tables += kt_scores_agree(score, q, heads, hd, n, s_stride, key, static_cast<double>(hd) * 0x1p-24);
          ASSERT_FALSE(HasFailure());
        }
      }
    }
  }
  if (tables == 0) GTEST_SKIP() << "no table on this CPU has attn_qk_f16_kt";
}

// attn_qk_i8_kt / attn_qk_fp8_kt (8-bit keys transposed, as KvBuffer stores
// int8 and FP8 K, with a scale per key) against double-precision dot
// products with the decoded keys (scale * value): the shapes of the 16-bit
// test, every byte value (FP8 NaN bytes give NaN scores), scales of several
// magnitudes. The bound adds the final product's rounding to the FMA
// chain's ((hd + 2) * 2^-24 * sum |q_d k_d|); every table gives the same bits.
TEST(CpuKernels, AttnQkKt8BitMatchesDoublePrecisionAndAgreesAcrossTables) {
  int tables = 0;
  const float* fp8 = fp8_e4m3_table();
  for (bool is_fp8 : {false, true}) {
    for (int heads : {1, 5, 8, 9}) {
      for (int64_t hd : {int64_t{1}, int64_t{12}, int64_t{40}, int64_t{64}, int64_t{100}, int64_t{256}}) {
        for (int n = 1; n <= kAttnKeys; n += (n < 9 ? 1 : 7)) {
          SCOPED_TRACE(std::string(is_fp8 ? "fp8" : "int8") + " heads=" + std::to_string(heads) +
                       " hd=" + std::to_string(hd) + " n=" + std::to_string(n));
          const int64_t kt_stride = 19;  // bytes between a key's elements
          const int64_t s_stride = kAttnKeys + 3;
          const auto seed = static_cast<uint32_t>(heads * 10000 + hd * 20 + n + (is_fp8 ? 7 : 0));
          std::mt19937 rng(seed);
          std::vector<uint8_t> keys_t(static_cast<size_t>(hd * kt_stride));  // [hd, kt_stride]
          for (auto& b : keys_t) {
            b = static_cast<uint8_t>(rng());
            if (is_fp8 && (b & 0x7f) == 0x7f) b ^= 0x01;  // NaN bytes: checked below
          }
          std::vector<float> scale(static_cast<size_t>(kAttnKeys));
          for (size_t j = 0; j < scale.size(); ++j)
            scale[j] = std::ldexp(0.75f + 0.01f * static_cast<float>(j), static_cast<int>(j % 5) - 9);
          auto key = [&](int j, int64_t d) {
            const uint8_t b = keys_t[static_cast<size_t>(d * kt_stride + j)];
            const double e = is_fp8 ? static_cast<double>(fp8[b]) : static_cast<double>(static_cast<int8_t>(b));
            return e * scale[static_cast<size_t>(j)];
          };
          const std::vector<float> q = random_floats(heads * hd, seed + 1, 2.0f);
          const std::vector<float> qt = transpose_q(q, heads, hd);
          auto score = [&](const Kernels& k, std::vector<float>& s) {
            const auto kt = is_fp8 ? k.attn_qk_fp8_kt : k.attn_qk_i8_kt;
            if (kt == nullptr) return false;
            kt(qt.data(), heads, keys_t.data(), kt_stride, scale.data(), n, hd, s.data(), s_stride);
            if (is_fp8) {  // a NaN element makes its key's scores NaN, the others unchanged
              std::vector<uint8_t> with_nan = keys_t;
              with_nan[static_cast<size_t>((hd - 1) * kt_stride + n - 1)] = 0xff;
              std::vector<float> s2(s.size(), -7.0f);
              kt(qt.data(), heads, with_nan.data(), kt_stride, scale.data(), n, hd, s2.data(), s_stride);
              for (int g = 0; g < heads; ++g) {
                for (int j = 0; j < n; ++j) {
                  const float got = s2[static_cast<size_t>(g * s_stride + j)];
                  if (j == n - 1) {
                    EXPECT_TRUE(std::isnan(got)) << "head " << g;
                  } else {
                    EXPECT_EQ(got, s[static_cast<size_t>(g * s_stride + j)]) << "head " << g << " key " << j;
                  }
                }
              }
            }
            return true;
          };
          tables += kt_scores_agree(score, q, heads, hd, n, s_stride, key, static_cast<double>(hd + 2) * 0x1p-24);
          ASSERT_FALSE(HasFailure());
        }
      }
    }
  }
  if (tables == 0) GTEST_SKIP() << "no table on this CPU has attn_qk_i8_kt";
}

// attn_pv_bf16 (a bf16 KV cache) against double-precision sums of the bf16
// rows: the f16 kernel's shapes with bf16 widening (head counts around the
// register blocks, hd around the vector steps and tails, strided rows).
TEST(CpuKernels, AttnPvBf16MatchesDoublePrecision) {
  const std::vector<Isa> isas = isas_with(&Kernels::attn_pv_bf16);
  if (isas.empty()) GTEST_SKIP() << "no table on this CPU has attn_pv_bf16";
  for (Isa isa : isas) {
    const Kernels& k = kernels_for(isa);
    for (int heads : {1, 3, 4, 5, 8}) {
      for (int64_t hd : {int64_t{1}, int64_t{16}, int64_t{40}, int64_t{64}, int64_t{130}, int64_t{256}}) {
        for (int n : {1, 7, kAttnKeys}) {
          SCOPED_TRACE(isa_label(isa) + " heads=" + std::to_string(heads) + " hd=" + std::to_string(hd) +
                       " n=" + std::to_string(n));
          const int64_t row = 3 * hd + 5;  // elements between rows (other KV heads in between)
          const auto seed = static_cast<uint32_t>(heads * 10000 + hd * 20 + n);
          const std::vector<float> rf = random_floats(n * row, seed);
          std::vector<uint16_t> rows(rf.size());  // [n, row] bf16
          for (size_t i = 0; i < rf.size(); ++i) rows[i] = fp32_to_bf16(rf[i]);
          auto at = [&](int j, int64_t i) {
            return static_cast<double>(bf16_to_fp32(rows[static_cast<size_t>(j * row + i)]));
          };
          const auto row_bytes = row * static_cast<int64_t>(sizeof(uint16_t));
          const int64_t p_stride = n + 3, out_stride = hd + 7;
          std::vector<float> p = random_floats(heads * p_stride, seed + 2);
          for (float& x : p) x = std::fabs(x);  // softmax weights
          const std::vector<float> out0 = random_floats(heads * out_stride, seed + 3);
          std::vector<float> out = out0;
          const std::vector<float> half(static_cast<size_t>(heads), 0.5f);  // the rescale (exact in f32 and double)
          const uint16_t* block = rows.data();                              // one block of n rows
          k.attn_pv_bf16(p.data(), p_stride, heads, &block, n, row_bytes, n, out.data(), out_stride, hd, half.data());
          for (int g = 0; g < heads; ++g) {
            for (int64_t i = 0; i < out_stride; ++i) {
              const auto e = static_cast<size_t>(g * out_stride + i);
              if (i >= hd) {
                ASSERT_EQ(out[e], out0[e]) << "wrote past hd: head " << g;
                continue;
              }
              double sum = 0.5 * out0[e], mag = std::fabs(0.5 * out0[e]);
              for (int j = 0; j < n; ++j) {
                const double prod = p[static_cast<size_t>(g * p_stride + j)] * at(j, i);
                sum += prod;
                mag += std::fabs(prod);
              }
              ASSERT_NEAR(out[e], sum, 2e-6 * mag + 1e-30) << "head " << g << " element " << i;
            }
          }
        }
      }
    }
  }
}

TEST(CpuKernels, RmsNorm) {
  for (int64_t n : kFloatSizes) {
    const std::vector<float> x = random_floats(n, 21, 2.0f);
    const std::vector<float> w = random_floats(n, 22);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      std::vector<float> y(static_cast<size_t>(n));
      kernels_for(isa).rmsnorm(x.data(), w.data(), y.data(), n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] * r * w[i], 1e-5 * std::fabs(x[i] * r * w[i]) + 1e-7);
      std::vector<float> inplace = x;  // y may alias x
      kernels_for(isa).rmsnorm(inplace.data(), w.data(), inplace.data(), n, 1e-5f);
      EXPECT_EQ(0, std::memcmp(inplace.data(), y.data(), y.size() * 4));
    }
  }
}

TEST(CpuKernels, SiluMul) {
  for (int64_t n : kFloatSizes) {
    std::vector<float> g = random_floats(n, 31, 4.0f);
    if (n > 4) {
      g[0] = -100.0f;  // exp(-g) overflows: silu -> -0
      g[1] = 100.0f;
      g[2] = -87.0f;
      g[3] = 0.0f;
    }
    const std::vector<float> u = random_floats(n, 32);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      std::vector<float> y(static_cast<size_t>(n));
      kernels_for(isa).silu_mul(g.data(), u.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double e = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
        EXPECT_NEAR(y[i], e, 2e-6 * std::fabs(e) + 1e-30) << "g=" << g[i];
      }
      std::vector<float> inplace = g;  // y may alias gate
      kernels_for(isa).silu_mul(inplace.data(), u.data(), inplace.data(), n);
      EXPECT_EQ(0, std::memcmp(inplace.data(), y.data(), y.size() * 4));
    }
  }
}

TEST(CpuKernels, Softmax) {
  for (int64_t n : kFloatSizes) {
    std::vector<float> x0 = random_floats(n, 41, 5.0f);
    if (n > 3) x0[1] = -std::numeric_limits<float>::infinity();  // a masked score
    double max = -INFINITY;
    for (float v : x0) max = std::max<double>(max, v);
    double sum = 0;
    for (float v : x0) sum += std::exp(v - max);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      std::vector<float> x = x0;
      kernels_for(isa).softmax(x.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(x0[i] - max) / sum;
        EXPECT_NEAR(x[i], e, 1e-5 * e + 1e-12);  // the f32 sum of n terms
      }
      if (n > 3) {
        EXPECT_EQ(x[1], 0.0f);
      }
    }
  }
}

// attn_pv_i8 reads int8 value rows in place (each row's hd bytes, then its
// f32 scale, as the KV cache stores them): on every table that has it, the
// bits of attn_pv_f16 over the same rows converted to f16, for every byte
// value, head counts around the 4-head register block, hd around the vector
// step and its tail, rows in blocks of 16 and 7 (between them the other KV
// heads' bytes), with and without a rescale.
TEST(CpuKernels, AttnPvI8MatchesF16RowsBitForBit) {
  const std::vector<Isa> isas = isas_with(&Kernels::attn_pv_i8);
  if (isas.empty()) GTEST_SKIP() << "no table on this CPU has attn_pv_i8";
  for (Isa isa : isas) {
    const Kernels& k = kernels_for(isa);
    for (int heads : {1, 3, 4, 8, 9}) {
      for (int64_t hd : {1, 7, 16, 40, 64, 80, 128, 130}) {
        for (int n : {0, 1, 7, 16, 40, 64}) {
          for (int v_rows : {16, 7}) {
            SCOPED_TRACE(isa_label(isa) + " heads=" + std::to_string(heads) + " hd=" + std::to_string(hd) +
                         " n=" + std::to_string(n) + " v_rows=" + std::to_string(v_rows));
            const int64_t stride = 3 * (hd + 4) + 5;  // bytes between rows (other KV heads in between)
            const int n_blocks = std::max(1, (n + v_rows - 1) / v_rows);
            std::vector<std::vector<uint8_t>> blocks(static_cast<size_t>(n_blocks));
            std::vector<std::vector<uint16_t>> blocks16(static_cast<size_t>(n_blocks));
            std::vector<const uint8_t*> v(blocks.size());
            std::vector<const uint16_t*> v16(blocks.size());
            for (int bl = 0; bl < n_blocks; ++bl) {
              auto& rows = blocks[static_cast<size_t>(bl)];
              auto& rows16 = blocks16[static_cast<size_t>(bl)];
              rows.assign(static_cast<size_t>(v_rows * stride), 0xAA);
              rows16.assign(static_cast<size_t>(v_rows * hd), 0);
              for (int r = 0; r < v_rows; ++r) {
                const int j = bl * v_rows + r;
                for (int64_t i = 0; i < hd; ++i) {
                  const auto byte = static_cast<uint8_t>((j * hd + i) * 7 + heads);
                  rows[static_cast<size_t>(r * stride + i)] = byte;
                  rows16[static_cast<size_t>(r * hd + i)] = fp32_to_fp16(static_cast<float>(static_cast<int8_t>(byte)));
                }
              }
              v[static_cast<size_t>(bl)] = rows.data();
              v16[static_cast<size_t>(bl)] = rows16.data();
            }
            const int64_t p_stride = n + 3, out_stride = hd + 7;
            const auto seed = static_cast<uint32_t>(heads * 1000 + hd * 10 + n + v_rows * 100000);
            std::vector<float> p = random_floats(heads * p_stride, seed + 1);
            for (float& x : p) x = std::fabs(x) * 0.01f;  // softmax weights times row scales
            const std::vector<float> out0 = random_floats(heads * out_stride, seed + 2);
            const std::vector<float> rescale = rescale_factors(heads);
            for (bool with_rescale : {false, true}) {
              std::vector<float> want = out0, got = out0;
              const float* r = with_rescale ? rescale.data() : nullptr;
              k.attn_pv_f16(p.data(), p_stride, heads, v16.data(), v_rows, hd * static_cast<int64_t>(sizeof(uint16_t)),
                            n, want.data(), out_stride, hd, r);
              k.attn_pv_i8(p.data(), p_stride, heads, v.data(), v_rows, stride, n, got.data(), out_stride, hd, r);
              ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                  << "rescale " << with_rescale;
            }
          }
        }
      }
    }
  }
}

// kv_fp8_to_f16: every byte value, row lengths with and
// without a vector tail; the f16 rows times the returned scales equal the
// stored values times their scales exactly (FP8 NaN stays NaN), and every
// ISA gives the scalar table's bits.
TEST(CpuKernels, KvFp8RowsToF16AreExact) {
  for (const bool fp8 : {true}) {
    for (const int64_t hd : {int64_t{40}, int64_t{64}, int64_t{128}, int64_t{7}}) {
      const int n = 300 / static_cast<int>(hd) + 2;  // rows enough for all 256 byte values
      const int64_t stride = hd + 4 + 12;            // values, the f32 scale, padding
      std::vector<uint8_t> rows(static_cast<size_t>(n * stride), 0xAA);
      for (int j = 0; j < n; ++j) {
        for (int64_t i = 0; i < hd; ++i)
          rows[static_cast<size_t>(j * stride + i)] = static_cast<uint8_t>((j * hd + i) * 7);
        const float sc = 0.013f * static_cast<float>(j + 1);
        std::memcpy(&rows[static_cast<size_t>(j * stride + hd)], &sc, sizeof(sc));
      }
      std::vector<uint16_t> want(static_cast<size_t>(n * hd));
      std::vector<float> want_scales(static_cast<size_t>(n));
      const Kernels& ref = kernels_for(Isa::kScalar);
      ref.kv_fp8_to_f16(rows.data(), stride, n, hd, want.data(), want_scales.data());
      for (int j = 0; j < n; ++j) {
        float sc;
        std::memcpy(&sc, &rows[static_cast<size_t>(j * stride + hd)], sizeof(sc));
        for (int64_t i = 0; i < hd; ++i) {
          const uint8_t b = rows[static_cast<size_t>(j * stride + i)];
          const float value = fp8 ? fp8_e4m3_to_fp32(b) : static_cast<float>(static_cast<int8_t>(b));
          const float got = fp16_to_fp32(want[static_cast<size_t>(j * hd + i)]) * want_scales[static_cast<size_t>(j)];
          if (std::isnan(value)) {
            EXPECT_TRUE(std::isnan(got)) << int{b};
          } else {
            EXPECT_EQ(got, value * sc) << (fp8 ? "fp8 " : "int8 ") << int{b};
          }
        }
      }
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_label(isa) + (fp8 ? " fp8" : " int8") + " hd=" + std::to_string(hd));
        const Kernels& k = kernels_for(isa);
        std::vector<uint16_t> out(want.size(), 0x1234);
        std::vector<float> scales(want_scales.size(), -1.0f);
        k.kv_fp8_to_f16(rows.data(), stride, n, hd, out.data(), scales.data());
        EXPECT_EQ(out, want);
        EXPECT_EQ(scales, want_scales);
      }
    }
  }
}

// softmax_tile over three tiles against the same online softmax in double
// precision: the running maximum exactly, the rescale factors, weights and
// running sum to a few ulp; a -inf score gives weight 0; a row of only -inf
// scores keeps m = -inf, l = 0 and c = 1 until its first finite score, then
// gets c = 0. Heads 1..17 and n up to 40 cover the SIMD paths' head groups
// (8 or 16 rows) and partial vectors.
TEST(CpuKernels, SoftmaxTile) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int heads : {1, 3, 8, 9, 17}) {
    for (int n : {1, 5, 16, 23, 40, 64, 70}) {
      const int64_t stride = n + 3;
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_label(isa) + " heads=" + std::to_string(heads) + " n=" + std::to_string(n));
        std::vector<float> m(heads, kNegInf), l(heads, 0.0f), c(heads, -1.0f);
        std::vector<double> rm(heads, -std::numeric_limits<double>::infinity()), rl(heads, 0.0);
        for (int tile = 0; tile < 3; ++tile) {
          std::vector<float> s = random_floats(heads * stride, 97 + 7 * tile + heads + n, 6.0f + 4.0f * tile);
          if (n > 3) s[2] = kNegInf;  // head 0, a masked score
          // The last head sees only -inf in the first tile.
          if (tile == 0) std::fill(s.begin() + (heads - 1) * stride, s.begin() + (heads - 1) * stride + n, kNegInf);
          const std::vector<float> s0 = s;
          kernels_for(isa).softmax_tile(s.data(), stride, heads, n, m.data(), l.data(), c.data());
          for (int g = 0; g < heads; ++g) {
            SCOPED_TRACE("tile " + std::to_string(tile) + " head " + std::to_string(g));
            double mx = rm[g];
            for (int j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(s0[g * stride + j]));
            if (mx == -std::numeric_limits<double>::infinity()) {
              EXPECT_EQ(m[g], kNegInf);
              EXPECT_EQ(l[g], 0.0f);
              EXPECT_EQ(c[g], 1.0f);
              for (int j = 0; j < n; ++j) EXPECT_EQ(s[g * stride + j], 0.0f);
              continue;
            }
            EXPECT_EQ(m[g], static_cast<float>(mx));  // a maximum is exact
            // exp of the f32 differences, as the kernels take them.
            const auto fmx = static_cast<float>(mx);
            const double rc = rm[g] == -std::numeric_limits<double>::infinity()
                                  ? 0.0
                                  : std::exp(static_cast<double>(static_cast<float>(rm[g]) - fmx));
            EXPECT_NEAR(c[g], rc, 4e-7 * rc);
            if (rm[g] == mx) {
              EXPECT_EQ(c[g], 1.0f);
            }
            double sum = 0.0;
            for (int j = 0; j < n; ++j) {
              const double e = std::exp(static_cast<double>(s0[g * stride + j] - fmx));
              EXPECT_NEAR(s[g * stride + j], e, 4e-7 * e + 1e-30);  // ~2 ulp
              sum += e;
            }
            for (int j = n; j < stride; ++j) EXPECT_EQ(s[g * stride + j], s0[g * stride + j]);  // untouched
            rl[g] = rl[g] * rc + sum;
            rm[g] = mx;
            EXPECT_NEAR(l[g], rl[g], 2e-6 * rl[g]);  // float steps over three tiles
          }
          if (n > 3) {
            EXPECT_EQ(s[2], 0.0f);
          }
        }
      }
    }
  }
}

// A tile of at most 16 scores per head takes its own path on AVX-512 (all
// heads' maxima and sums in one transposed reduction each); a 17th score of
// -inf sends the same tile through the head-by-head path, whose extra p is
// an exact 0. Both must give the same bits, on every ISA, over three tiles.
TEST(CpuKernels, SoftmaxTileOneVectorMatchesLongerTileBits) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int heads : {1, 8, 9, 17}) {
    for (int n : {5, 16}) {
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_label(isa) + " heads=" + std::to_string(heads) + " n=" + std::to_string(n));
        const Kernels& k = kernels_for(isa);
        constexpr int64_t kStride = 20;
        std::vector<float> m1(heads, kNegInf), l1(heads, 0.0f), c1(heads, 0.0f);
        std::vector<float> m2 = m1, l2 = l1, c2 = c1;
        for (int tile = 0; tile < 3; ++tile) {
          std::vector<float> s1 = random_floats(heads * kStride, 31 + 5 * tile + heads + n, 8.0f + 3.0f * tile);
          for (int g = 0; g < heads; ++g) s1[g * kStride + n] = kNegInf;
          std::vector<float> s2 = s1;
          k.softmax_tile(s1.data(), kStride, heads, n, m1.data(), l1.data(), c1.data());
          k.softmax_tile(s2.data(), kStride, heads, n + 1, m2.data(), l2.data(), c2.data());
          for (int g = 0; g < heads; ++g) {
            for (int j = 0; j < n; ++j) {
              ASSERT_EQ(std::bit_cast<uint32_t>(s1[g * kStride + j]), std::bit_cast<uint32_t>(s2[g * kStride + j]))
                  << "tile " << tile << " head " << g << " p " << j;
            }
          }
          for (int g = 0; g < heads; ++g) {
            ASSERT_EQ(std::bit_cast<uint32_t>(m1[g]), std::bit_cast<uint32_t>(m2[g])) << "m, head " << g;
            ASSERT_EQ(std::bit_cast<uint32_t>(l1[g]), std::bit_cast<uint32_t>(l2[g])) << "l, head " << g;
            ASSERT_EQ(std::bit_cast<uint32_t>(c1[g]), std::bit_cast<uint32_t>(c2[g])) << "c, head " << g;
          }
        }
      }
    }
  }
}

// Rope against the rotation written out directly, for both pairings.
TEST(CpuKernels, Rope) {
  const int n_heads = 3, head_dim = 64;
  for (int n_rot : {64, 32}) {
    std::vector<float> inv_freq(static_cast<size_t>(n_rot / 2));
    for (int i = 0; i < n_rot / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / static_cast<float>(n_rot));
    const std::vector<float> x0 = random_floats(n_heads * head_dim, 51);
    for (RopeStyle style : {RopeStyle::kNorm, RopeStyle::kNeox}) {
      for (int32_t pos : {0, 1, 17, 4095}) {
        std::vector<float> expect = x0;
        for (int h = 0; h < n_heads; ++h) {
          for (int i = 0; i < n_rot / 2; ++i) {
            const double theta = static_cast<double>(static_cast<float>(pos) * inv_freq[i]);
            const int a = style == RopeStyle::kNorm ? 2 * i : i;
            const int b = style == RopeStyle::kNorm ? 2 * i + 1 : i + n_rot / 2;
            const double xa = x0[h * head_dim + a], xb = x0[h * head_dim + b];
            expect[h * head_dim + a] = static_cast<float>(xa * std::cos(theta) - xb * std::sin(theta));
            expect[h * head_dim + b] = static_cast<float>(xa * std::sin(theta) + xb * std::cos(theta));
          }
        }
        for (Isa isa : supported_isas()) {
          SCOPED_TRACE(isa_label(isa) + " pos=" + std::to_string(pos) + " n_rot=" + std::to_string(n_rot));
          std::vector<float> x = x0;
          kernels_for(isa).rope(x.data(), n_heads, head_dim, n_rot, pos, inv_freq.data(), style);
          for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], expect[i], 2e-6) << "i=" << i;
        }
      }
    }
  }
}

TEST(CpuKernels, SumF32) {
  for (int64_t n : kFloatSizes) {
    const std::vector<float> x = random_floats(n, 61);
    double e = 0, a = 0;
    for (float v : x) {
      e += v;
      a += std::fabs(v);
    }
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_label(isa) + " n=" + std::to_string(n));
      EXPECT_NEAR(kernels_for(isa).sum_f32(x.data(), n), e, 1e-6 * a);
    }
  }
}

TEST(CpuKernels, TableIsaAndBest) {
  for (Isa isa : supported_isas()) EXPECT_EQ(kernels_for(isa).isa, isa);
  EXPECT_EQ(kernels().isa, best_isa());
}

}  // namespace
}  // namespace tessera::cpu
