#include "core/finite_check.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace tessera {

namespace {

struct ScaleField {
  size_t offset;  // bytes into the block
  const char* name;
};

// The f16 scale fields of one block (ggml-common.h layouts, core/dtype.h).
std::vector<ScaleField> scale_fields(DType t) {
  switch (t) {
    case DType::kQ8_0:
      return {{offsetof(BlockQ8_0, d), "d"}};
    case DType::kQ4_0:
      return {{offsetof(BlockQ4_0, d), "d"}};
    case DType::kQ4_1:
      return {{offsetof(BlockQ4_1, d), "d"}, {offsetof(BlockQ4_1, m), "m"}};
    case DType::kQ5_0:
      return {{offsetof(BlockQ5_0, d), "d"}};
    case DType::kQ5_1:
      return {{offsetof(BlockQ5_1, d), "d"}, {offsetof(BlockQ5_1, m), "m"}};
    case DType::kQ2_K:
      return {{offsetof(BlockQ2_K, d), "d"}, {offsetof(BlockQ2_K, dmin), "dmin"}};
    case DType::kQ3_K:
      return {{offsetof(BlockQ3_K, d), "d"}};
    case DType::kQ4_K:
      return {{offsetof(BlockQ4_K, d), "d"}, {offsetof(BlockQ4_K, dmin), "dmin"}};
    case DType::kQ5_K:
      return {{offsetof(BlockQ5_K, d), "d"}, {offsetof(BlockQ5_K, dmin), "dmin"}};
    case DType::kQ6_K:
      return {{offsetof(BlockQ6_K, d), "d"}};
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_K:  // f32 scale; an activation format, never a stored weight
      return {};
  }
  return {};
}

}  // namespace

std::string nonfinite_name(float v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return "finite";
}

std::optional<NonFinite> first_nonfinite_scale(DType t, const void* row, int64_t cols) {
  const std::vector<ScaleField> fields = scale_fields(t);
  if (fields.empty()) return std::nullopt;
  const int64_t n_blocks = cols / dtype_block_elems(t);
  const size_t block_bytes = dtype_row_bytes(t, dtype_block_elems(t));
  const auto* p = static_cast<const uint8_t*>(row);
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (const ScaleField& f : fields) {
      uint16_t h;
      std::memcpy(&h, p + static_cast<size_t>(b) * block_bytes + f.offset, sizeof(h));
      if ((h & 0x7c00u) == 0x7c00u) {  // f16 exponent all ones: Inf or NaN
        return NonFinite{b, std::string("scale ") + f.name + " is " + nonfinite_name(fp16_to_fp32(h))};
      }
    }
  }
  return std::nullopt;
}

std::optional<NonFinite> first_nonfinite_value(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return NonFinite{i, "value is " + nonfinite_name(x[i])};
  }
  return std::nullopt;
}

}  // namespace tessera
