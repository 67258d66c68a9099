// Element and block types of weights and activations, with the GGUF/ggml
// type ids they correspond to (GGUF spec, "ggml_type"). Quantized types are
// blocks of kBlockElems elements that share a scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tessera {

// Enumerators after kQ4_0 are the ggml block formats added for quantization
// (ggml/src/ggml-common.h defines the layouts; GGUF stores them verbatim).
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kQ8_K };

// Every DType, in enum order (for loops in tests and name lookups).
inline constexpr DType kAllDTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                       DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                                       DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ8_K};

// Q8_0: 32 signed 8-bit values times one f16 scale d: x[i] = d * qs[i]. 34 bytes.
struct BlockQ8_0 {
  uint16_t d;  // f16 bits
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q4_0: 32 4-bit values times one f16 scale d. Byte j holds element j in its
// low nibble and element j + 16 in its high nibble: x = d * (nibble - 8). 18 bytes.
struct BlockQ4_0 {
  uint16_t d;  // f16 bits
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: 32 4-bit values u with an f16 scale d and an f16 offset m:
// x = d * u + m. Nibble order as Q4_0 (byte j: element j low, j + 16 high). 20 bytes.
struct BlockQ4_1 {
  uint16_t d;  // f16 bits
  uint16_t m;  // f16 bits
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: 32 5-bit values; the low 4 bits as Q4_0's nibbles, bit 4 of element i
// is bit i of the little-endian uint32 qh: x = d * (u - 16). 22 bytes.
struct BlockQ5_0 {
  uint16_t d;  // f16 bits
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: Q5_0's 5-bit layout with an offset: x = d * u + m. 24 bytes.
struct BlockQ5_1 {
  uint16_t d;  // f16 bits
  uint16_t m;  // f16 bits
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

inline constexpr int kQuantBlockElems = 32;
// Elements of a K-quant super-block (ggml QK_K).
inline constexpr int kSuperBlockElems = 256;

// Q2_K: 16 sub-blocks of 16 elements, x = d * (sc & 15) * u - dmin * (sc >> 4)
// with u 2-bit. scales[j] holds sub-block j's 4-bit scale (low) and min (high).
// Element 128h + 32c + l (h < 2, c < 4, l < 32) is bits 2c..2c+1 of
// qs[32h + l] and belongs to sub-block 8h + 2c + l / 16. 84 bytes.
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d;     // f16 bits
  uint16_t dmin;  // f16 bits
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16, x = d * (s_j - 32) * (u - 4) with u 3-bit and
// s_j a 6-bit scale. Element 128h + 32c + l: low 2 bits = bits 2c..2c+1 of
// qs[32h + l], bit 2 = bit 4h + c of hmask[l]; sub-block 8h + 2c + l / 16.
// s_j: low 4 bits in scales[j] (j < 8) or scales[j - 8] >> 4 (j >= 8), high 2
// bits = bits 2(j / 4).. of scales[8 + j % 4]. 110 bytes.
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;  // f16 bits
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32, x = d * sc_j * u - dmin * m_j with u 4-bit and
// 6-bit sc_j, m_j packed in scales[12] (ggml get_scale_min_k4: j < 4: sc =
// scales[j] & 63, m = scales[j + 4] & 63; j >= 4: sc = (scales[j + 4] & 15) |
// (scales[j - 4] >> 6) << 4, m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4).
// Element 64p + l (l < 32) is the low nibble of qs[32p + l] (sub-block 2p),
// element 64p + 32 + l its high nibble (sub-block 2p + 1). 144 bytes.
struct BlockQ4_K {
  uint16_t d;     // f16 bits
  uint16_t dmin;  // f16 bits
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: Q4_K plus a fifth bit: element 32j + l (sub-block j) has bit 4 =
// bit j of qh[l]. 176 bytes.
struct BlockQ5_K {
  uint16_t d;     // f16 bits
  uint16_t dmin;  // f16 bits
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16, x = d * scales[j] * (u - 32) with u 6-bit and
// int8 scales. Element 128h + 32c + l: low 4 bits = ql[64h + 32(c & 1) + l]
// (low nibble for c < 2, high for c >= 2), high 2 bits = bits 2c..2c+1 of
// qh[32h + l]; sub-block 8h + 2c + l / 16. 210 bytes.
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;  // f16 bits
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q8_K: the activation format K-quant dot products pair with: x = d * qs,
// f32 scale, and bsums[j] = sum of qs[16j .. 16j + 15]. 292 bytes.
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// Elements per block: 1 for float types, 32 for Q8_0..Q5_1, 256 for K-quants.
int dtype_block_elems(DType t);
// Bytes per block (bytes per element for float types).
size_t dtype_block_bytes(DType t);
// Bytes of a row of n elements; n must be a multiple of dtype_block_elems.
size_t dtype_row_bytes(DType t, int64_t n);
// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", ..., "q6_k", "q8_k" (ggml names).
const char* dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// True for the block formats (everything but f32/f16/bf16).
bool dtype_is_quantized(DType t);
// True for the 256-element K-quant super-block formats (Q2_K..Q8_K).
bool dtype_is_k_quant(DType t);
// The activation format a weight type's integer dot product pairs with:
// Q8_0 for the 32-element formats, Q8_K for K-quants, F32 for float types.
DType dtype_vec_dot_type(DType t);
// ggml_type id as stored in GGUF tensor infos (F32=0, F16=1, Q4_0=2, Q4_1=3,
// Q5_0=6, Q5_1=7, Q8_0=8, Q2_K=10 .. Q6_K=14, Q8_K=15, BF16=30).
uint32_t dtype_to_ggml(DType t);
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
// Name of any ggml type id, including ones tessera cannot run yet ("q4_k", ...).
const char* ggml_type_name(uint32_t ggml_type);

// IEEE 754 binary16 <-> binary32, round-to-nearest-even, exact for all inputs
// (subnormals, Inf, NaN).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);

// bfloat16 (the top 16 bits of a binary32) <-> binary32, round-to-nearest-even.
inline float bf16_to_fp32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t fp32_to_bf16(float f);

}  // namespace tessera
