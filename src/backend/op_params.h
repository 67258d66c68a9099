// Shapes and parameters of the model ops that every backend implements
// (backend/backend.h). Plain data; no device state.
#pragma once

#include <cstdint>

#include "core/rope_style.h"

namespace tessera {

// Attention heads of one layer: MHA (n_kv_heads == n_heads), GQA
// (Ainslie et al. 2023, arXiv:2305.13245) or MQA (n_kv_heads == 1).
struct AttentionShape {
  int32_t n_heads = 0;     // query heads
  int32_t n_kv_heads = 0;  // key/value heads; n_heads % n_kv_heads == 0
  int32_t head_dim = 0;
  float scale = 1.0f;  // applied to q·k; usually 1 / sqrt(head_dim)
};

// Rotary position embedding of one projection (RoFormer, arXiv:2104.09864):
// each of n_heads heads of head_dim elements has its first n_rot dimensions
// rotated, pair i by angle position * inv_freq[i].
struct RopeParams {
  int32_t n_heads = 0;
  int32_t head_dim = 0;
  int32_t n_rot = 0;                // even, <= head_dim
  const float* inv_freq = nullptr;  // [n_rot / 2], host memory, borrowed
  RopeStyle style = RopeStyle::kNorm;
};

}  // namespace tessera
