#include "core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace tessera {
namespace {

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f)))) << h;
      continue;
    }
    EXPECT_EQ(fp32_to_fp16(f), h) << "h=" << h;
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);       // rounds to infinity
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0);  // ties to even: 0
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 1);
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even mantissa
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie rounds up to even
}

TEST(Fp16, RoundsToNearest) {
  // For floats between adjacent halves the result is the nearer one.
  for (uint32_t h = 0x0400; h < 0x7bff; h += 7) {
    const float lo = fp16_to_fp32(static_cast<uint16_t>(h));
    const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const float q1 = lo + (hi - lo) * 0.25f;
    const float q3 = lo + (hi - lo) * 0.75f;
    EXPECT_EQ(fp32_to_fp16(q1), h);
    EXPECT_EQ(fp32_to_fp16(q3), h + 1);
  }
}

TEST(Bf16, RoundTripAndRounding) {
  EXPECT_EQ(bf16_to_fp32(fp32_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_fp32(fp32_to_bf16(-3.5f)), -3.5f);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, SizesAndGgmlIds) {
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(dtype_row_bytes(DType::kBF16, 10), 20u);
  for (DType t : kAllDTypes) {
    EXPECT_EQ(dtype_from_ggml(dtype_to_ggml(t)), t);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_FALSE(dtype_from_ggml(16).has_value());  // iq2_xxs: not supported
  EXPECT_STREQ(ggml_type_name(12), "q4_k");
  // Block sizes and ggml ids from ggml-common.h / the GGUF spec.
  struct Expect {
    DType t;
    uint32_t ggml;
    int elems;
    size_t bytes;
  };
  const Expect expect[] = {{DType::kQ4_1, 3, 32, 20},   {DType::kQ5_0, 6, 32, 22},   {DType::kQ5_1, 7, 32, 24},
                           {DType::kQ2_K, 10, 256, 84}, {DType::kQ3_K, 11, 256, 110}, {DType::kQ4_K, 12, 256, 144},
                           {DType::kQ5_K, 13, 256, 176}, {DType::kQ6_K, 14, 256, 210}, {DType::kQ8_K, 15, 256, 292}};
  for (const Expect& e : expect) {
    SCOPED_TRACE(dtype_name(e.t));
    EXPECT_EQ(dtype_to_ggml(e.t), e.ggml);
    EXPECT_STREQ(dtype_name(e.t), ggml_type_name(e.ggml));
    EXPECT_EQ(dtype_block_elems(e.t), e.elems);
    EXPECT_EQ(dtype_block_bytes(e.t), e.bytes);
  }
  EXPECT_EQ(dtype_vec_dot_type(DType::kQ5_1), DType::kQ8_0);
  EXPECT_EQ(dtype_vec_dot_type(DType::kQ6_K), DType::kQ8_K);
  EXPECT_EQ(dtype_vec_dot_type(DType::kBF16), DType::kF32);
}

}  // namespace
}  // namespace tessera
