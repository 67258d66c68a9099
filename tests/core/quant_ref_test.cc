// Reference dequantization of the block formats against values worked out by
// hand from the format definitions (core/dtype.h, ggml-common.h), plus
// quantize -> dequantize round trips.
#include "core/quant_ref.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"

namespace tessera {
namespace {

constexpr uint16_t kHalfOne = 0x3C00;       // 1.0
constexpr uint16_t kHalfHalf = 0x3800;      // 0.5
constexpr uint16_t kHalfTwo = 0x4000;       // 2.0
constexpr uint16_t kHalfMinusOne = 0xBC00;  // -1.0
constexpr uint16_t kHalfQuarter = 0x3400;   // 0.25

template <typename Block>
std::vector<float> dequant(DType t, const Block& b) {
  std::vector<float> y(static_cast<size_t>(dtype_block_elems(t)));
  dequantize_row(t, &b, y.data(), dtype_block_elems(t));
  return y;
}

TEST(QuantRef, Q4_1HandBuilt) {
  BlockQ4_1 b{};
  b.d = kHalfHalf;
  b.m = kHalfMinusOne;
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(i | (15 - i) << 4);
  const auto y = dequant(DType::kQ4_1, b);
  EXPECT_EQ(y[0], -1.0f);   // 0.5 * 0 - 1
  EXPECT_EQ(y[5], 1.5f);    // 0.5 * 5 - 1
  EXPECT_EQ(y[16], 6.5f);   // 0.5 * 15 - 1
  EXPECT_EQ(y[31], -1.0f);  // 0.5 * 0 - 1
}

TEST(QuantRef, Q5_0HandBuilt) {
  BlockQ5_0 b{};
  b.d = kHalfTwo;
  const uint32_t qh = 0xAAAAAAAAu;  // odd elements have bit 4 set
  std::memcpy(b.qh, &qh, 4);
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(i | ((i + 1) & 15) << 4);
  const auto y = dequant(DType::kQ5_0, b);
  EXPECT_EQ(y[0], -32.0f);   // u = 0
  EXPECT_EQ(y[1], 2.0f);     // u = 1 + 16
  EXPECT_EQ(y[16], -30.0f);  // u = 1
  EXPECT_EQ(y[17], 4.0f);    // u = 2 + 16
  EXPECT_EQ(y[31], 0.0f);    // u = 0 + 16
}

TEST(QuantRef, Q5_1HandBuilt) {
  BlockQ5_1 b{};
  b.d = kHalfOne;
  b.m = kHalfQuarter;
  std::memset(b.qh, 0xff, 4);
  std::memset(b.qs, 0xff, 16);
  for (float v : dequant(DType::kQ5_1, b)) EXPECT_EQ(v, 31.25f);
  b.qh[3] = 0x7f;  // element 31 loses bit 4
  EXPECT_EQ(dequant(DType::kQ5_1, b)[31], 15.25f);
}

TEST(QuantRef, Q2_KHandBuilt) {
  BlockQ2_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::memset(b.qs, 0xE4, sizeof(b.qs));  // 2-bit field c of every byte holds c
  const auto y = dequant(DType::kQ2_K, b);
  EXPECT_EQ(y[0], -7.5f);    // sub-block 0: 0 * 0 - 0.5 * 15
  EXPECT_EQ(y[40], -4.5f);   // h0 c1 -> u 1, sub-block 2: 2 * 1 - 0.5 * 13
  EXPECT_EQ(y[130], -3.5f);  // h1 c0 -> u 0, sub-block 8: 0 - 0.5 * 7
  EXPECT_EQ(y[255], 45.0f);  // h1 c3 -> u 3, sub-block 15: 15 * 3 - 0
}

TEST(QuantRef, Q3_KHandBuilt) {
  BlockQ3_K b{};
  b.d = kHalfOne;
  std::memset(b.scales, 0x21, 8);               // low 4 bits: 1 for j < 8, 2 for j >= 8
  std::memset(b.scales + 8, 0xE4, 4);           // high 2 bits: j / 4
  std::memset(b.qs, 0xE4, sizeof(b.qs));        // low 2 bits of element 128h + 32c + l: c
  std::memset(b.hmask, 0x0F, sizeof(b.hmask));  // bit 2 set for h = 0 only
  // Scale codes: j 0..3 -> 1, 4..7 -> 17, 8..11 -> 34, 12..15 -> 50 (minus 32).
  const auto y = dequant(DType::kQ3_K, b);
  EXPECT_EQ(y[0], 0.0f);      // -31 * (0 + 4 - 4)
  EXPECT_EQ(y[32], -31.0f);   // sub 2: -31 * 1
  EXPECT_EQ(y[100], -45.0f);  // sub 6: -15 * 3
  EXPECT_EQ(y[128], -8.0f);   // sub 8: 2 * (0 - 4)
  EXPECT_EQ(y[200], -36.0f);  // sub 12: 18 * (2 - 4)
  EXPECT_EQ(y[255], -18.0f);  // sub 15: 18 * (3 - 4)
}

// Q4_K / Q5_K scale bytes: sub-blocks 0..3 get scale 1, min 2; 4..7 get
// scale 3 | 3 << 4 = 51 and min 5 | 1 << 4 = 21.
void k4_scales(uint8_t* s) {
  std::memset(s, 0xC1, 4);
  std::memset(s + 4, 0x42, 4);
  std::memset(s + 8, 0x53, 4);
}

TEST(QuantRef, Q4_KHandBuilt) {
  BlockQ4_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfOne;
  k4_scales(b.scales);
  std::memset(b.qs, 0x97, sizeof(b.qs));  // low nibble 7, high 9
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4k_scale_min(j, b.scales, &sc, &m);
    EXPECT_EQ(sc, j < 4 ? 1 : 51);
    EXPECT_EQ(m, j < 4 ? 2 : 21);
  }
  const auto y = dequant(DType::kQ4_K, b);
  EXPECT_EQ(y[0], 5.0f);      // sub 0, low: 1 * 7 - 2
  EXPECT_EQ(y[32], 7.0f);     // sub 1, high: 1 * 9 - 2
  EXPECT_EQ(y[200], 336.0f);  // sub 6, low: 51 * 7 - 21
  EXPECT_EQ(y[255], 438.0f);  // sub 7, high: 51 * 9 - 21
}

TEST(QuantRef, Q5_KHandBuilt) {
  BlockQ5_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfOne;
  k4_scales(b.scales);
  std::memset(b.qs, 0x97, sizeof(b.qs));
  std::memset(b.qh, 0xAA, sizeof(b.qh));  // odd sub-blocks get bit 4
  const auto y = dequant(DType::kQ5_K, b);
  EXPECT_EQ(y[0], 5.0f);
  EXPECT_EQ(y[32], 23.0f);  // 1 * (9 + 16) - 2
  EXPECT_EQ(y[200], 336.0f);
  EXPECT_EQ(y[255], 1254.0f);  // 51 * 25 - 21
}

TEST(QuantRef, Q6_KHandBuilt) {
  BlockQ6_K b{};
  b.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j - 8);
  std::memset(b.ql, 0x21, sizeof(b.ql));  // low 4 bits: 1 (c < 2) or 2 (c >= 2)
  std::memset(b.qh, 0xE4, sizeof(b.qh));  // high 2 bits: c
  const auto y = dequant(DType::kQ6_K, b);
  EXPECT_EQ(y[0], 124.0f);   // 0.5 * -8 * (1 - 32)
  EXPECT_EQ(y[40], 45.0f);   // c1, sub 2: 0.5 * -6 * (17 - 32)
  EXPECT_EQ(y[70], -4.0f);   // c2, sub 4: 0.5 * -4 * (34 - 32)
  EXPECT_EQ(y[255], 63.0f);  // c3, sub 15: 0.5 * 7 * (50 - 32)
}

TEST(QuantRef, Q8_KBlockSums) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 16) - 7.5f;
  x[3] = 127.0f;  // sets d = 1
  BlockQ8_K b;
  quantize_row_q8_k_ref(x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  EXPECT_EQ(b.qs[3], 127);
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += b.qs[16 * j + i];
    EXPECT_EQ(b.bsums[j], sum);
  }
}

const DType kBlockTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K,
                             DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ8_K};

TEST(QuantRef, AllZeroBlocksAreZero) {
  for (DType t : kBlockTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<uint8_t> zero(dtype_block_bytes(t), 0);
    std::vector<float> y(static_cast<size_t>(dtype_block_elems(t)), 1.0f);
    dequantize_row(t, zero.data(), y.data(), dtype_block_elems(t));
    for (float v : y) EXPECT_EQ(v, 0.0f);
    // Quantizing zeros gives zeros back, no NaN from 0 / 0.
    std::vector<float> x(y.size(), 0.0f);
    std::vector<uint8_t> q(dtype_block_bytes(t));
    quantize_row(t, x.data(), q.data(), dtype_block_elems(t));
    dequantize_row(t, q.data(), y.data(), dtype_block_elems(t));
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
}

// Relative RMS error of quantize -> dequantize on N(0, 1) data, per format,
// and finite results for extreme inputs (large, tiny, one spike).
TEST(QuantRef, RoundTripError) {
  struct Case {
    DType t;
    double max_rel_rms;
  };
  // K-quant bounds sit between the searched scales' error (Q2_K 0.267, Q3_K
  // 0.143, Q4_K 0.0707, Q5_K 0.0352, Q6_K 0.0171 on this data) and the plain
  // min/max scales' (0.327, 0.155, 0.0770, 0.0373, 0.0187), so a search that
  // stops finding better scales fails here.
  const Case cases[] = {{DType::kQ8_0, 0.01},   {DType::kQ4_0, 0.12},  {DType::kQ4_1, 0.12},  {DType::kQ5_0, 0.06},
                        {DType::kQ5_1, 0.06},   {DType::kQ2_K, 0.29},  {DType::kQ3_K, 0.149}, {DType::kQ4_K, 0.074},
                        {DType::kQ5_K, 0.0362}, {DType::kQ6_K, 0.018}, {DType::kQ8_K, 0.01}};
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = 4096;
  std::vector<float> x(n), y(n);
  for (float& v : x) v = dist(rng);
  for (const Case& c : cases) {
    SCOPED_TRACE(dtype_name(c.t));
    std::vector<uint8_t> q(dtype_row_bytes(c.t, n));
    quantize_row(c.t, x.data(), q.data(), n);
    dequantize_row(c.t, q.data(), y.data(), n);
    double err = 0, ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      err += (x[i] - y[i]) * static_cast<double>(x[i] - y[i]);
      ref += x[i] * static_cast<double>(x[i]);
    }
    EXPECT_LT(std::sqrt(err / ref), c.max_rel_rms);
    EXPECT_GT(std::sqrt(err / ref), c.max_rel_rms / 20);  // it does quantize
    for (float scale : {1e3f, 1e-6f}) {
      std::vector<float> xs(n);
      for (int64_t i = 0; i < n; ++i) xs[i] = x[i] * scale;
      xs[17] = 6e4f * (scale > 1 ? 1.0f : 1e-9f);  // one spike
      quantize_row(c.t, xs.data(), q.data(), n);
      dequantize_row(c.t, q.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(std::isfinite(y[i])) << "scale " << scale << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace tessera
