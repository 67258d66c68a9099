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

enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

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

inline constexpr int kQuantBlockElems = 32;

// Elements per block: 1 for float types, 32 for Q8_0/Q4_0.
int dtype_block_elems(DType t);
// Bytes per block (bytes per element for float types).
size_t dtype_block_bytes(DType t);
// Bytes of a row of n elements; n must be a multiple of dtype_block_elems.
size_t dtype_row_bytes(DType t, int64_t n);
// "f32", "f16", "bf16", "q8_0", "q4_0".
const char* dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// ggml_type id as stored in GGUF tensor infos (F32=0, F16=1, Q4_0=2, Q8_0=8, BF16=30).
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
