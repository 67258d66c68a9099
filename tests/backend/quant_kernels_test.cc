// QuantKernels (Q4_1/Q5_0/Q5_1 x Q8_0, K-quants x Q8_K): the scalar set
// against dequantize + double-precision dot, every ISA against the scalar
// set, on quantized random rows and on random bytes (every bit pattern of
// the packed fields, extreme activations).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/dtype.h"
#include "core/quant_ref.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

using testing::isa_label;
using testing::random_floats;

const DType kTypes[] = {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K,
                        DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

float call_dot(const Kernels& k, DType t, const void* w, const void* x, int64_t n) {
  const QuantKernels& q = *k.quant;
  const auto* x0 = static_cast<const BlockQ8_0*>(x);
  const auto* xk = static_cast<const BlockQ8_K*>(x);
  switch (t) {
    case DType::kQ4_1:
      return q.dot_q4_1(static_cast<const BlockQ4_1*>(w), x0, n);
    case DType::kQ5_0:
      return q.dot_q5_0(static_cast<const BlockQ5_0*>(w), x0, n);
    case DType::kQ5_1:
      return q.dot_q5_1(static_cast<const BlockQ5_1*>(w), x0, n);
    case DType::kQ2_K:
      return q.dot_q2_k(static_cast<const BlockQ2_K*>(w), xk, n);
    case DType::kQ3_K:
      return q.dot_q3_k(static_cast<const BlockQ3_K*>(w), xk, n);
    case DType::kQ4_K:
      return q.dot_q4_k(static_cast<const BlockQ4_K*>(w), xk, n);
    case DType::kQ5_K:
      return q.dot_q5_k(static_cast<const BlockQ5_K*>(w), xk, n);
    case DType::kQ6_K:
      return q.dot_q6_k(static_cast<const BlockQ6_K*>(w), xk, n);
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ8_K:
      break;
  }
  ADD_FAILURE() << "no QuantKernels entry for " << dtype_name(t);
  return 0;
}

// Overwrites the f16 scale fields of every block with small finite values
// (random bytes elsewhere are all valid codes).
void sanitize_scales(DType t, uint8_t* w, int64_t n_blocks, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-0.05f, 0.05f);
  auto put = [&](uint8_t* p) {
    const uint16_t h = fp32_to_fp16(d(rng));
    std::memcpy(p, &h, 2);
  };
  const size_t bb = dtype_block_bytes(t);
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w + b * bb;
    switch (t) {
      case DType::kQ4_1:
      case DType::kQ5_1:
      case DType::kQ4_K:
      case DType::kQ5_K:
        put(blk), put(blk + 2);
        break;  // d, m / dmin first
      case DType::kQ5_0:
        put(blk);
        break;
      case DType::kQ2_K:
        put(blk + offsetof(BlockQ2_K, d)), put(blk + offsetof(BlockQ2_K, dmin));
        break;
      case DType::kQ3_K:
        put(blk + offsetof(BlockQ3_K, d));
        break;
      case DType::kQ6_K:
        put(blk + offsetof(BlockQ6_K, d));
        break;
      case DType::kF32:
      case DType::kF16:
      case DType::kBF16:
      case DType::kQ8_0:
      case DType::kQ4_0:
      case DType::kQ8_K:
        break;
    }
  }
}

struct Case {
  std::vector<uint8_t> w;  // [n / block] blocks of t
  std::vector<uint8_t> x;  // [n / block] blocks of dtype_vec_dot_type(t)
};

void check_case(DType t, const Case& c, int64_t n) {
  const DType act = dtype_vec_dot_type(t);
  std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
  dequantize_row(t, c.w.data(), wf.data(), n);
  dequantize_row(act, c.x.data(), xf.data(), n);
  double dot = 0, abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(wf[i]));
    dot += static_cast<double>(wf[i]) * xf[i];
    abs += std::fabs(static_cast<double>(wf[i]) * xf[i]);
  }
  const double tol = 2e-5 * abs + 1e-30;
  const float scalar = call_dot(kernels_for(Isa::kScalar), t, c.w.data(), c.x.data(), n);
  EXPECT_NEAR(scalar, dot, tol);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_label(isa));
    EXPECT_NEAR(call_dot(kernels_for(isa), t, c.w.data(), c.x.data(), n), scalar, tol);
  }
}

TEST(QuantKernels, QuantizedRowsMatchReference) {
  uint32_t seed = 11;
  for (DType t : kTypes) {
    const int64_t blk = dtype_block_elems(t);
    for (int64_t n : {blk, 3 * blk, int64_t{4096}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
      Case c;
      c.w.resize(dtype_row_bytes(t, n));
      quantize_row(t, random_floats(n, seed++).data(), c.w.data(), n);
      const DType act = dtype_vec_dot_type(t);
      c.x.resize(dtype_row_bytes(act, n));
      quantize_row(act, random_floats(n, seed++, 3.0f).data(), c.x.data(), n);
      check_case(t, c, n);
    }
  }
}

// The K-quant dot_rows kernels give each row the single-row dot's bits, for
// rows with padding between them (decode calls them on rows far apart).
TEST(QuantKernels, KQuantDotRowsBitIdenticalToDot) {
  uint32_t seed = 900;
  for (DType t : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    for (int64_t n : {int64_t{256}, int64_t{768}, int64_t{4096}}) {
      const size_t row_bytes = dtype_row_bytes(t, n);
      const auto stride = static_cast<int64_t>(row_bytes + 3 * dtype_block_bytes(t));
      std::vector<uint8_t> w(static_cast<size_t>(stride) * kDotRows);
      for (int r = 0; r < kDotRows; ++r) quantize_row(t, random_floats(n, seed++).data(), w.data() + r * stride, n);
      std::vector<uint8_t> x(dtype_row_bytes(DType::kQ8_K, n));
      quantize_row(DType::kQ8_K, random_floats(n, seed++, 3.0f).data(), x.data(), n);
      const auto* xk = reinterpret_cast<const BlockQ8_K*>(x.data());
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n) + " " + isa_label(isa));
        const QuantKernels& q = *kernels_for(isa).quant;
        float out[kDotRows];
        if (t == DType::kQ4_K) q.dot_rows_q4_k(reinterpret_cast<const BlockQ4_K*>(w.data()), stride, xk, n, out);
        if (t == DType::kQ5_K) q.dot_rows_q5_k(reinterpret_cast<const BlockQ5_K*>(w.data()), stride, xk, n, out);
        if (t == DType::kQ6_K) q.dot_rows_q6_k(reinterpret_cast<const BlockQ6_K*>(w.data()), stride, xk, n, out);
        for (int r = 0; r < kDotRows; ++r) {
          const float single = call_dot(kernels_for(isa), t, w.data() + r * stride, x.data(), n);
          EXPECT_EQ(0, std::memcmp(&out[r], &single, sizeof(float)))
              << "row " << r << ": " << out[r] << " vs " << single;
        }
      }
    }
  }
}

// Random bytes: every code, scale and high-bit pattern, with activations at
// +-127 (the largest int8 products the kernels must not saturate on).
TEST(QuantKernels, RandomBytesAndExtremeActivations) {
  std::mt19937 rng(3);
  for (DType t : kTypes) {
    const int64_t n = 2048;
    SCOPED_TRACE(dtype_name(t));
    for (int variant = 0; variant < 3; ++variant) {
      Case c;
      c.w.resize(dtype_row_bytes(t, n));
      for (uint8_t& b : c.w) b = static_cast<uint8_t>(rng());
      if (variant == 2) std::fill(c.w.begin(), c.w.end(), 0xff);  // every code at its maximum
      sanitize_scales(t, c.w.data(), n / dtype_block_elems(t), rng);
      std::vector<float> x = random_floats(n, 100 + variant);
      if (variant >= 1) {
        for (float& v : x) v = v >= 0 ? 1.0f : -1.0f;  // all +-127 after quantization
      }
      const DType act = dtype_vec_dot_type(t);
      c.x.resize(dtype_row_bytes(act, n));
      quantize_row(act, x.data(), c.x.data(), n);
      check_case(t, c, n);
    }
  }
}

TEST(QuantKernels, QuantizeQ8_KBitIdentical) {
  for (int64_t n : {256, 1024}) {
    std::vector<float> x = random_floats(n, 5, 4.0f);
    x[7] = 0.5f;  // exact ties after scaling are rare; include zero blocks too
    std::vector<BlockQ8_K> ref(static_cast<size_t>(n / 256));
    quantize_row_q8_k_ref(x.data(), ref.data(), n);
    for (Isa isa : supported_isas()) {
      std::vector<BlockQ8_K> got(ref.size());
      kernels_for(isa).quant->quantize_row_q8_k(x.data(), got.data(), n);
      EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size() * sizeof(BlockQ8_K))) << isa_label(isa);
    }
  }
}

// The SIMD quantizers against the reference on many random rows and on rows
// built to hit every branch: all zeros, one huge or tiny (subnormal) value,
// values at exact .5 ties after scaling, +-Inf and NaN, +-0.
TEST(QuantKernels, QuantizeQ8_KBitIdenticalEdgeRows) {
  const int64_t n = 256;
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 40; ++i) rows.push_back(random_floats(n, 1000 + i, i % 2 ? 1e-3f : 50.0f));
  rows.emplace_back(n, 0.0f);
  rows.emplace_back(n, -0.0f);
  for (float big : {3.0e38f, -3.0e38f, 1e-40f, -1e-44f, 1.17e-38f, 5e-39f}) {
    std::vector<float> r = random_floats(n, 7, 1.0f);
    for (float& v : r) v *= std::fabs(big) < 1 ? std::fabs(big) : 1.0f;
    r[13] = big;
    rows.push_back(r);
  }
  {
    std::vector<float> r(n);  // amax 127: x * id lands on k + 0.5 exactly
    for (int64_t i = 0; i < n; ++i)
      r[i] = static_cast<float>(i % 255 - 127) + (i % 3 == 0 ? 0.5f : (i % 3 == 1 ? -0.5f : 0.25f));
    r[0] = 127.0f;
    rows.push_back(r);
    for (float& v : r) v *= 0.5f;  // amax 63.5: ties in the scaled values again
    rows.push_back(r);
  }
  {
    std::vector<float> r = random_floats(n, 8, 2.0f);
    r[3] = std::numeric_limits<float>::quiet_NaN();
    rows.push_back(r);
    r[100] = std::numeric_limits<float>::infinity();
    rows.push_back(r);
    r[3] = 1.0f;
    r[200] = -std::numeric_limits<float>::infinity();
    rows.push_back(r);
  }
  std::vector<float> all;
  for (const auto& r : rows) all.insert(all.end(), r.begin(), r.end());
  const int64_t total = static_cast<int64_t>(all.size());
  std::vector<BlockQ8_K> ref(static_cast<size_t>(total / n));
  quantize_row_q8_k_ref(all.data(), ref.data(), total);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_label(isa));
    std::vector<BlockQ8_K> got(ref.size());
    kernels_for(isa).quant->quantize_row_q8_k(all.data(), got.data(), total);
    for (size_t b = 0; b < ref.size(); ++b) {
      EXPECT_EQ(0, std::memcmp(&got[b], &ref[b], sizeof(BlockQ8_K))) << "row " << b;
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
