// The x16 weight layout (backend/cpu/weight_layout.h): a hand-worked row,
// the round trip for full and short groups, which views prepare_matrix
// repacks, which float views it copies out of a mapped file, and F16
// matrices as bf16 panels (BackendOptions::f16_matmul).
#include "backend/cpu/weight_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/matmul.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

// A Q4_0 row of two blocks whose bytes count up from 0: block 0 is bytes
// 0..17 (scale 0,1; quants 2..17), block 1 bytes 18..35. The x16 row is one
// group of g = 2: both scales, then word k of block 0 and block 1 for k = 0..3.
TEST(WeightLayout, HandWorkedQ4_0Row) {
  std::vector<uint8_t> gguf(36);
  std::iota(gguf.begin(), gguf.end(), uint8_t{0});
  const std::vector<uint8_t> want = {0,  1,  18, 19,                   // scales of blocks 0, 1
                                     2,  3,  4,  5,  20, 21, 22, 23,   // word 0 of blocks 0, 1
                                     6,  7,  8,  9,  24, 25, 26, 27,   // word 1
                                     10, 11, 12, 13, 28, 29, 30, 31,   // word 2
                                     14, 15, 16, 17, 32, 33, 34, 35};  // word 3
  std::vector<uint8_t> x16(36, 0xee);
  repack_rows_x16(DType::kQ4_0, gguf.data(), x16.data(), 1, 64);
  EXPECT_EQ(x16, want);
}

// A Q5_1 row of two blocks counting up from 0: block 0 is bytes 0..23 (d
// 0,1; m 2,3; qh 4..7; quants 8..23), block 1 bytes 24..47. The x16 group
// (g = 2) keeps the fields field-major (both d, both m, both qh), then the
// quant words word-major.
TEST(WeightLayout, HandWorkedQ5_1Row) {
  std::vector<uint8_t> gguf(48);
  std::iota(gguf.begin(), gguf.end(), uint8_t{0});
  const std::vector<uint8_t> want = {0,  1,  24, 25,                   // d of blocks 0, 1
                                     2,  3,  26, 27,                   // m
                                     4,  5,  6,  7,  28, 29, 30, 31,   // qh
                                     8,  9,  10, 11, 32, 33, 34, 35,   // word 0 of blocks 0, 1
                                     12, 13, 14, 15, 36, 37, 38, 39,   // word 1
                                     16, 17, 18, 19, 40, 41, 42, 43,   // word 2
                                     20, 21, 22, 23, 44, 45, 46, 47};  // word 3
  std::vector<uint8_t> x16(48, 0xee);
  repack_rows_x16(DType::kQ5_1, gguf.data(), x16.data(), 1, 64);
  EXPECT_EQ(x16, want);
}

// A Q5_K row of two super-blocks (one group of g = 2, 8 lanes): the head
// keeps Q4_K's order (both d, both dmin, 8 three-byte lane entries: 48
// bytes), then the lanes' even sub-block fifth-bit words, then their odd
// ones, then the quant words. qh[5] = 0x04 is bit 2 (sub-block 2 = chunk 1,
// even) of element 5 of super-block 0: bit 5 of lane 1's first word.
// Super-block 1's qh[31] = 0x80 is bit 7 (sub-block 7 = chunk 3, odd):
// bit 31 of lane 7's second word. Quant bytes count up from 0.
TEST(WeightLayout, HandWorkedQ5_KFifthBits) {
  std::vector<uint8_t> gguf(2 * sizeof(BlockQ5_K), 0);
  auto* b = reinterpret_cast<BlockQ5_K*>(gguf.data());
  b[0].qh[5] = 0x04;
  b[1].qh[31] = 0x80;
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < 128; ++i) b[s].qs[i] = static_cast<uint8_t>(128 * s + i);
  }
  std::vector<uint8_t> x16(gguf.size(), 0xee);
  repack_rows_x16(DType::kQ5_K, gguf.data(), x16.data(), 1, 512);
  auto word = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, x16.data() + at, 4);
    return v;
  };
  for (size_t lane = 0; lane < 8; ++lane) {
    EXPECT_EQ(word(32 + 4 * lane), lane == 1 ? 1u << 5 : 0u) << "even word of lane " << lane;
    EXPECT_EQ(word(64 + 4 * lane), lane == 7 ? 1u << 31 : 0u) << "odd word of lane " << lane;
  }
  // Quant word k of lane L = 4s + c: bytes 32c + 4k .. + 3 of super-block s.
  for (size_t k = 0; k < 8; ++k) {
    for (size_t lane = 0; lane < 8; ++lane) {
      const size_t at = 96 + 4 * (8 * k + lane);
      const uint8_t first = static_cast<uint8_t>(128 * (lane / 4) + 32 * (lane % 4) + 4 * k);
      EXPECT_EQ(x16[at], first) << "word " << k << " lane " << lane;
      EXPECT_EQ(x16[at + 3], static_cast<uint8_t>(first + 3));
    }
  }
  std::vector<uint8_t> back(gguf.size());
  unpack_rows_x16(DType::kQ5_K, x16.data(), back.data(), 1, 512);
  EXPECT_EQ(back, gguf);
}

// A Q3_K row of two super-blocks (one group of g = 2, 8 lanes): d at 0,
// the 8 lane entries at 4 (24 bytes), the quant words at 28. Element 70 of
// super-block 0 (chunk 1: lane 1, element 6 of the chunk: word 1, byte 2)
// has u = 6: low bits 2 at bits 2..3 of byte 2 of lane 1's word 0, third
// bit 1 at bit 1 of byte 2 of lane 1's word 4. Element 255 of super-block
// 1 (lane 7, element 63: word 15, byte 3) has u = 5: low bits 1 at bits
// 6..7 of byte 3 of lane 7's word 3, third bit at bit 7 of byte 3 of lane
// 7's word 5. Scale 5 of super-block 1 (stored 0x2a = 42) is sub-block 1
// of lane 5: bits 6..11 of its entry.
TEST(WeightLayout, HandWorkedQ3_KBits) {
  std::vector<uint8_t> gguf(2 * sizeof(BlockQ3_K), 0);
  auto* b = reinterpret_cast<BlockQ3_K*>(gguf.data());
  // Element 128h + 32c + l: bits 2c of qs[32h + l], bit 4h + c of hmask[l].
  b[0].qs[6] = 2 << 4;  // element 70 = 64 + 6: h 0, c 2, l 6
  b[0].hmask[6] = 1 << 2;
  b[1].qs[32 + 31] = 1 << 6;  // element 255: h 1, c 3, l 31
  b[1].hmask[31] = 1 << 7;
  b[1].scales[5] = 0x0a;        // low four bits of s_5 = 42
  b[1].scales[8 + 1] = 2 << 2;  // its high two bits (j / 4 = 1)
  b[0].d = 0x1234;
  b[1].d = 0x5678;
  std::vector<uint8_t> x16(gguf.size(), 0xee);
  repack_rows_x16(DType::kQ3_K, gguf.data(), x16.data(), 1, 512);
  EXPECT_EQ(x16[0] | x16[1] << 8, 0x1234);
  EXPECT_EQ(x16[2] | x16[3] << 8, 0x5678);
  for (size_t lane = 0; lane < 8; ++lane) {
    const size_t at = 4 + 3 * lane;
    const uint32_t e = uint32_t{x16[at]} | uint32_t{x16[at + 1]} << 8 | uint32_t{x16[at + 2]} << 16;
    EXPECT_EQ(e, lane == 5 ? 42u << 6 : 0u) << "entry of lane " << lane;
  }
  // Byte i of word j of lane L.
  auto byte = [&](size_t j, size_t lane, size_t i) { return x16[28 + 4 * (8 * j + lane) + i]; };
  for (size_t j = 0; j < 6; ++j) {
    for (size_t lane = 0; lane < 8; ++lane) {
      for (size_t i = 0; i < 4; ++i) {
        int want = 0;
        if (lane == 1 && i == 2 && j == 0) want = 2 << 2;
        if (lane == 1 && i == 2 && j == 4) want = 1 << 1;
        if (lane == 7 && i == 3 && j == 3) want = 1 << 6;
        if (lane == 7 && i == 3 && j == 5) want = 1 << 7;
        EXPECT_EQ(byte(j, lane, i), want) << "word " << j << " lane " << lane << " byte " << i;
      }
    }
  }
  std::vector<uint8_t> back(gguf.size());
  unpack_rows_x16(DType::kQ3_K, x16.data(), back.data(), 1, 512);
  EXPECT_EQ(back, gguf);
}

// Repack then unpack gives the bytes back, for rows of whole groups, of a
// short last group, and of one short group only; the repacked row differs.
TEST(WeightLayout, RoundTrip) {
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ5_K,
                  DType::kQ3_K, DType::kQ2_K}) {
    const std::vector<int64_t> sizes = dtype_is_k_quant(t) ? std::vector<int64_t>{256, 768, 1024, 1280, 2304}
                                                           : std::vector<int64_t>{32, 96, 512, 544, 1024 + 480};
    for (int64_t cols : sizes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " cols=" + std::to_string(cols));
      const int64_t rows = 3;
      const size_t bytes = dtype_row_bytes(t, cols) * rows;
      std::vector<uint8_t> gguf(bytes);
      for (size_t i = 0; i < bytes; ++i) gguf[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
      std::vector<uint8_t> x16(bytes), back(bytes);
      repack_rows_x16(t, gguf.data(), x16.data(), rows, cols);
      unpack_rows_x16(t, x16.data(), back.data(), rows, cols);
      EXPECT_EQ(back, gguf);
      if (cols > dtype_block_elems(t)) {
        EXPECT_NE(x16, gguf);
      }
    }
  }
}

// The x16 types become x16 copies only for a kernel table with their tile
// kernels (every SIMD table has them); other types, and already repacked
// views, come back as they are.
TEST(WeightLayout, PrepareMatrixRepacksOnlyForTileKernels) {
  ThreadPool pool(2);
  const int64_t rows = 5, cols = 544;
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kF16, DType::kQ4_1, DType::kQ5_0,
                  DType::kQ5_1, DType::kQ5_K, DType::kQ3_K, DType::kQ2_K}) {
    const int64_t c = dtype_is_k_quant(t) ? 512 : cols;
    std::vector<uint8_t> bytes(dtype_row_bytes(t, c) * rows, 0x11);
    const MatrixView w{t, bytes.data(), rows, c};
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + testing::isa_label(isa));
      const Kernels& k = kernels_for(isa);
      WeightStorage storage;
      const MatrixView p = prepare_matrix(k, w, pool, storage);
      const bool repack = k.gemm != nullptr && has_x16_layout(t) && has_tile(*k.gemm, t);
      if (k.isa != Isa::kScalar && has_x16_layout(t)) {
        EXPECT_TRUE(repack);
      }
      EXPECT_EQ(p.layout, repack ? WeightLayout::kX16 : WeightLayout::kGguf);
      EXPECT_EQ(p.data != w.data, repack);
      EXPECT_EQ(storage.size(), repack ? 1u : 0u);
      EXPECT_EQ(p.rows, rows);
      if (repack) {
        std::vector<uint8_t> want(bytes.size());
        repack_rows_x16(t, bytes.data(), want.data(), rows, c);
        EXPECT_EQ(0, std::memcmp(p.data, want.data(), want.size()));
        const MatrixView again = prepare_matrix(k, p, pool, storage);
        EXPECT_EQ(again.data, p.data);
        EXPECT_EQ(storage.size(), 1u);
      }
    }
  }
}

// A float matrix that lies in a mapped model file is copied (same bytes) into
// a WeightCopy, 2 MiB-aligned; the same bytes on the heap are not copied.
TEST(WeightLayout, PrepareMatrixCopiesMappedFloatMatrices) {
  ThreadPool pool(2);
  const int64_t rows = 3, cols = 1000;
  std::vector<uint8_t> bytes(dtype_row_bytes(DType::kF16, cols) * rows);
  std::iota(bytes.begin(), bytes.end(), uint8_t{7});
  const std::string path = ::testing::TempDir() + "weight_layout_f16.bin";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const Kernels& k = kernels_for(Isa::kScalar);
  WeightStorage storage;
  const MatrixView mapped{DType::kF16, file->data(), rows, cols};
  const MatrixView p = prepare_matrix(k, mapped, pool, storage);
  ASSERT_EQ(storage.size(), 1u);
  EXPECT_NE(p.data, mapped.data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.data) % (uintptr_t{2} << 20), 0u);
  EXPECT_EQ(storage.front().size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(p.data, bytes.data(), bytes.size()));
  EXPECT_EQ(p.layout, WeightLayout::kGguf);

  const MatrixView heap{DType::kF16, bytes.data(), rows, cols};
  EXPECT_EQ(prepare_matrix(k, heap, pool, storage).data, heap.data);
  EXPECT_EQ(storage.size(), 1u);

  // A moved copy keeps its bytes; the moved-from one owns nothing.
  WeightCopy moved = std::move(storage.front());
  EXPECT_EQ(moved.data(), p.data);
  EXPECT_EQ(storage.front().data(), nullptr);
  EXPECT_EQ(0, std::memcmp(moved.data(), bytes.data(), bytes.size()));
  std::remove(path.c_str());
}

// F16 -> bf16 values, hand-worked: 1 + k * 2^-10 for k = 1, 4 (a tie: to
// even), 12 (a tie: up to the even 1 + 16 * 2^-10) and 13; the largest f16
// (65504 rounds up to 2^16, still finite); the smallest subnormal 2^-24;
// -0, Inf and NaN.
TEST(WeightLayout, F16AsBf16PanelRoundsToNearestEven) {
  const std::vector<std::pair<uint16_t, uint16_t>> cases = {
      {0x3c01, 0x3f80}, {0x3c04, 0x3f80}, {0x3c0c, 0x3f82}, {0x3c0d, 0x3f82}, {0x7bff, 0x4780},
      {0x0001, 0x3380}, {0x8000, 0x8000}, {0x7c00, 0x7f80}, {0xfc00, 0xff80}, {0x3555, 0x3eab}};
  // One row of cases.size() (even) columns: a panel of h = 1 row is the row itself.
  std::vector<uint16_t> f16, want;
  for (const auto& [h, b] : cases) {
    f16.push_back(h);
    want.push_back(b);
  }
  std::vector<uint16_t> got(f16.size());
  repack_rows_f16_as_bf16_panel(f16.data(), got.data(), 1, static_cast<int64_t>(f16.size()));
  EXPECT_EQ(got, want);
  const uint16_t nan_f16 = 0x7e00;
  const uint16_t pair[2] = {nan_f16, 0x3c00};
  uint16_t out[2];
  repack_rows_f16_as_bf16_panel(pair, out, 1, 2);
  EXPECT_EQ(out[0] & 0x7f80, 0x7f80);  // exponent all ones ...
  EXPECT_NE(out[0] & 0x007f, 0);       // ... and a mantissa: NaN
  EXPECT_EQ(out[1], 0x3f80);
}

// prepare_matrix with f16_as_bf16: an F16 matrix becomes a BF16 view in the
// panel layout whose bytes are the panels of the rounded values, where the
// table has tile_bf16_dp; never for the output head (f32_activations), never
// without the switch, and not on tables without the bf16 tile.
TEST(WeightLayout, PrepareMatrixTakesF16AsBf16Panels) {
  ThreadPool pool(2);
  const int64_t rows = 37, cols = 96;  // two full panels and one of 5 rows
  std::vector<uint16_t> f16(static_cast<size_t>(rows * cols)), rounded(f16.size());
  for (size_t i = 0; i < f16.size(); ++i) {
    f16[i] = fp32_to_fp16(static_cast<float>(static_cast<int>(i * 2654435761u >> 20) % 2001 - 1000) / 337.0f);
    rounded[i] = fp32_to_bf16(fp16_to_fp32(f16[i]));
  }
  std::vector<uint16_t> want(f16.size());
  repack_rows_bf16_panel(rounded.data(), want.data(), rows, cols);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(testing::isa_label(isa));
    const Kernels& k = kernels_for(isa);
    const bool has_bf16_tile = k.gemm != nullptr && k.gemm->tile_bf16_dp != nullptr;
    for (bool logits : {false, true}) {
      for (bool as_bf16 : {false, true}) {
        SCOPED_TRACE(std::string(logits ? "logits" : "matmul") + (as_bf16 ? ", as bf16" : ", f16"));
        MatrixView w{DType::kF16, f16.data(), rows, cols};
        w.f32_activations = logits;
        WeightStorage storage;
        const MatrixView p = prepare_matrix(k, w, pool, storage, as_bf16);
        const bool converted = as_bf16 && has_bf16_tile && !logits;
        EXPECT_EQ(p.dtype, converted ? DType::kBF16 : DType::kF16);
        EXPECT_EQ(p.layout, converted ? WeightLayout::kBf16Panel : WeightLayout::kGguf);
        EXPECT_EQ(p.rows, rows);
        EXPECT_EQ(p.cols, cols);
        if (converted) {
          EXPECT_EQ(0, std::memcmp(p.data, want.data(), want.size() * sizeof(uint16_t)));
        } else {
          EXPECT_EQ(p.data, w.data);
        }
      }
    }
  }
}

// prepare_matrix with half_inexact on a table with tile_i16 and without
// tile_bf16_dp (AVX2; AVX-512 without AVX512-BF16, kernels_without_avx512_bf16
// here): an F16 or BF16 matrix that fits the table's panel height keeps its
// dtype, in the int16 panel layout with its scales beside it, equal to the
// repack; never for the output head, never without the switch, never for
// shapes that do not fit (rows % R, cols % 64).
TEST(WeightLayout, PrepareMatrixTakesHalfAsInt16Panels) {
  ThreadPool pool(2);
  std::vector<std::pair<std::string, Kernels>> tables;
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels_without_avx512_bf16(isa);
    if (k.gemm == nullptr || k.gemm->tile_i16 == nullptr) continue;
    ASSERT_EQ(k.gemm->tile_bf16_dp, nullptr);
    tables.emplace_back(testing::isa_label(isa) + (isa == Isa::kAvx512 ? " without avx512_bf16" : ""), k);
  }
  if (tables.empty()) GTEST_SKIP() << "no table with tile_i16 on this CPU";
  for (DType t : {DType::kF16, DType::kBF16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{48, 128}, {40, 128}, {37, 128}, {48, 96}}) {
      std::vector<uint16_t> half(static_cast<size_t>(rows * cols));
      for (size_t i = 0; i < half.size(); ++i) {
        const float v = static_cast<float>(static_cast<int>(i * 2654435761u >> 20) % 2001 - 1000) / 337.0f;
        half[i] = t == DType::kF16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
      }
      for (const auto& [label, k] : tables) {
        const int pr = k.gemm->i16_panel_rows;
        const bool fits = fits_i16_panels(rows, cols, pr);
        std::vector<int16_t> want_q(half.size());
        std::vector<float> want_d(static_cast<size_t>(rows * cols / 64));
        if (fits) repack_rows_as_i16_panel(t, half.data(), want_q.data(), want_d.data(), rows, cols, pr);
        for (bool logits : {false, true}) {
          for (bool inexact : {false, true}) {
            SCOPED_TRACE(label + " " + dtype_name(t) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                         (logits ? " logits" : " matmul") + (inexact ? ", inexact" : ", exact"));
            MatrixView w{t, half.data(), rows, cols};
            w.f32_activations = logits;
            WeightStorage storage;
            const MatrixView p = prepare_matrix(k, w, pool, storage, inexact);
            const bool converted = inexact && !logits && fits;
            EXPECT_EQ(p.dtype, t);
            EXPECT_EQ(p.layout, converted ? WeightLayout::kI16Panel : WeightLayout::kGguf);
            if (converted) {
              ASSERT_NE(p.i16_scales, nullptr);
              EXPECT_EQ(0, std::memcmp(p.data, want_q.data(), want_q.size() * sizeof(int16_t)));
              EXPECT_EQ(0, std::memcmp(p.i16_scales, want_d.data(), want_d.size() * sizeof(float)));
            } else {
              EXPECT_EQ(p.data, w.data);
              EXPECT_EQ(p.i16_scales, nullptr);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
