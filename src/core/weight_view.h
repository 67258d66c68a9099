// WeightView: a weight matrix as a model file stores it, in host memory.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace tessera {

// W[rows, cols], row-major (cols contiguous), each row
// dtype_row_bytes(dtype, cols) bytes in the GGUF block layout (core/dtype.h).
// Not owned: usually a view into a memory-mapped model file. A backend turns
// it into a DeviceMatrix (backend/backend.h) before computing with it.
struct WeightView {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  // Bytes of the whole matrix.
  uint64_t bytes() const { return static_cast<uint64_t>(rows) * dtype_row_bytes(dtype, cols); }
};

}  // namespace tessera
