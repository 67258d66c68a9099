// Non-finite values in weights: the cheap check reads only the f16 scale
// fields of quantized blocks (a block with an Inf/NaN scale dequantizes to
// Inf/NaN whatever its quants); the full check dequantizes (core/quant_ref.h)
// and tests every value. Used by model loading (always the cheap check,
// `--check-tensors` the full one) and by `tessera quantize`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace tessera {

// A non-finite value found in one row: its block (the scale check) or
// column (the value check), and a description such as "scale d is +Inf"
// or "value is NaN".
struct NonFinite {
  int64_t index = 0;  // block (scale check) or element (value check) within the row
  std::string what;
};

// The first block of `row` (`cols` elements of type `t`, cols a multiple of
// its block size) whose f16 scale fields (d; m or dmin where the format has
// one) are Inf or NaN. Float types have no scales: always nullopt.
std::optional<NonFinite> first_nonfinite_scale(DType t, const void* row, int64_t cols);
// The first element of x[0, n) that is Inf or NaN.
std::optional<NonFinite> first_nonfinite_value(const float* x, int64_t n);
// "NaN", "+Inf" or "-Inf" (for messages); "finite" otherwise.
std::string nonfinite_name(float v);

}  // namespace tessera
