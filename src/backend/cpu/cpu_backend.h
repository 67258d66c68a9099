// The CPU backend: the Backend contract (backend/backend.h) on host memory,
// with the kernel table of one ISA (kernels.h), register-tiled matmul and
// the x16 weight layout where the ISA has tile kernels (gemm.h,
// weight_layout.h), paged attention with an online softmax
// (paged_attention.h) and the KV cache in KvBuffer (kv_buffer.h). It owns
// the thread pool every op runs on. The reference for every other backend.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "tessera/backend_options.h"
#include "tessera/status.h"

namespace tessera::cpu {

// Creates a CPU backend. Errors (kInvalidArgument): threads < 1, an ISA this
// CPU does not support, decode_streams outside 1..kMaxDecodeStreams.
Result<std::unique_ptr<Backend>> make_cpu_backend(const BackendOptions& options);

// The kernel table a CPU backend runs (for tests and tools); requires a
// backend made by make_cpu_backend.
const Kernels& cpu_backend_kernels(const Backend& backend);

// The host view of a matrix prepared by a CPU backend (its layout included).
const MatrixView& cpu_matrix_view(const DeviceMatrix& m);

}  // namespace tessera::cpu
