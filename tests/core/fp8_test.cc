// FP8 E4M3 conversions against hand-worked encodings and a brute-force
// nearest-value search over all codes (OCP FP8 v1.0, E4M3FN).
#include "core/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tessera {
namespace {

TEST(Fp8E4M3, KnownEncodings) {
  EXPECT_EQ(fp32_to_fp8_e4m3(0.0f), 0x00);
  EXPECT_EQ(fp32_to_fp8_e4m3(-0.0f), 0x80);
  EXPECT_EQ(fp32_to_fp8_e4m3(1.0f), 0x38);  // exponent field 7
  EXPECT_EQ(fp32_to_fp8_e4m3(-2.0f), 0xC0);
  EXPECT_EQ(fp32_to_fp8_e4m3(448.0f), 0x7E);  // largest finite
  EXPECT_EQ(fp32_to_fp8_e4m3(1e6f), 0x7E);    // saturates
  EXPECT_EQ(fp32_to_fp8_e4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(fp32_to_fp8_e4m3(0x1p-6f), 0x08);     // smallest normal
  EXPECT_EQ(fp32_to_fp8_e4m3(0x1p-9f), 0x01);     // smallest subnormal
  EXPECT_EQ(fp32_to_fp8_e4m3(0x1p-10f), 0x00);    // tie between 0 and 2^-9: even
  EXPECT_EQ(fp32_to_fp8_e4m3(0x1.8p-10f), 0x01);  // 0.75 ulp rounds up
  EXPECT_EQ(fp32_to_fp8_e4m3(1.0625f), 0x38);     // tie 1.0 / 1.125: even mantissa 0
  EXPECT_EQ(fp32_to_fp8_e4m3(1.1875f), 0x3A);     // tie 1.125 / 1.25: even mantissa 2
  EXPECT_EQ(fp32_to_fp8_e4m3(1.96875f), 0x40);    // tie 1.875 / 2.0 carries into the exponent
  EXPECT_EQ(fp32_to_fp8_e4m3(std::nanf("")) & 0x7F, 0x7F);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_fp32(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_fp32(0xFF)));
  EXPECT_EQ(fp8_e4m3_to_fp32(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_fp32(0x01), 0x1p-9f);
  EXPECT_EQ(fp8_e4m3_to_fp32(0x37), 0.9375f);
}

TEST(Fp8E4M3, EveryCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    EXPECT_EQ(fp32_to_fp8_e4m3(fp8_e4m3_to_fp32(static_cast<uint8_t>(c))), c) << c;
  }
}

// Nearest code by exhaustive search (ties to the even code), saturating at 448.
uint8_t nearest(float x) {
  const float a = std::fmin(std::fabs(x), 448.0f);
  int best = 0;
  double best_d = 1e30;
  for (int c = 0; c <= 0x7E; ++c) {
    const double d = std::fabs(static_cast<double>(fp8_e4m3_to_fp32(static_cast<uint8_t>(c))) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best = c;
      best_d = d;
    }
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

TEST(Fp8E4M3, MatchesExhaustiveNearestOnRandomValues) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-12.0f, 10.0f);
  std::uniform_int_distribution<int> sign(0, 1);
  for (int i = 0; i < 20000; ++i) {
    const float x = (sign(rng) != 0 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    ASSERT_EQ(fp32_to_fp8_e4m3(x), nearest(x)) << x;
  }
  // Exact midpoints between neighbouring codes.
  for (int c = 0; c < 0x7E; ++c) {
    const float mid =
        0.5f * (fp8_e4m3_to_fp32(static_cast<uint8_t>(c)) + fp8_e4m3_to_fp32(static_cast<uint8_t>(c + 1)));
    ASSERT_EQ(fp32_to_fp8_e4m3(mid), nearest(mid)) << mid;
  }
}

}  // namespace
}  // namespace tessera
