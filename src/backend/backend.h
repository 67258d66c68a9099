// The backend contract: what the model graph (model/transformer.h) asks of a
// device. A backend owns device memory (weights, activations, the KV cache)
// and implements the ops of a Llama-family decoder step at tensor
// granularity; the graph decides what runs in which order and never touches
// device memory itself. Every device (the CPU backend in backend/cpu/, a GPU
// backend later) implements this interface, and the CPU backend is the
// reference every other one is tested against.
//
// The shape follows the usual split between a model graph and per-device ops
// (ggml's backend interface; CTranslate2's per-device primitives; vLLM's
// model runner staging a step's inputs once), written for tessera's ragged
// paged-attention step: one set_batch() stages the step's token ids,
// positions, slot mapping and block tables (ForwardBatch), and the ops that
// need them (embedding, RoPE, KV write, paged attention, the logits rows)
// read the staged copy.
//
// Conventions:
//  - A "device pointer" (float*, void*) is an address inside a DeviceBuffer
//    this backend allocated, or inside its prepared weights; only the
//    backend dereferences it (the CPU backend's are host addresses). The
//    graph may offset it within its buffer (row t of x is x + t * cols).
//  - Activations are f32, row-major [rows, cols]. "rows" of a step op is
//    the staged batch's n_tokens unless a count is passed.
//  - Ops are issued in order and may run asynchronously; download() and
//    synchronize() wait for every op issued before them.
//  - Ops do not validate shapes (the graph checks a batch once, in
//    Transformer::validate); passing inconsistent shapes is a programming
//    error. Errors that input can cause (an unsupported weight type, memory
//    exhaustion) are returned as Status by prepare/allocate/create calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend/forward_batch.h"
#include "backend/op_params.h"
#include "core/dtype.h"
#include "core/weight_view.h"
#include "kv/kv_cache_spec.h"
#include "tessera/status.h"

namespace tessera {

// What a buffer holds; a backend may place each kind in different memory.
enum class BufferKind { kWeights, kActivations };

// A block of device memory, owned by the caller of Backend::allocate and
// freed when destroyed. Must not outlive its backend.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  // Device address of the first byte; bytes() bytes follow.
  virtual void* data() = 0;
  virtual size_t bytes() const = 0;
  float* f32() { return static_cast<float*>(data()); }
};

// A weight matrix W[rows, cols] prepared by a backend (uploaded, possibly
// re-laid-out for its kernels). Owned by the caller of prepare_matrix; must
// not outlive its backend. Rows keep their meaning: y = x · Wᵀ.
class DeviceMatrix {
 public:
  virtual ~DeviceMatrix() = default;
  DType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // Whether the backend still reads the host WeightView this was prepared
  // from (false when it made its own copy: the caller may then free memory
  // it owned for that view, e.g. a tensor-parallel column split).
  bool reads_source() const { return reads_source_; }
  // Bytes one pass over the matrix reads in the layout the backend runs
  // (quants, scales, panels): what a decode step reads of it, the numerator
  // of `tessera bench`'s roofline. Default: the file layout's
  // rows * dtype_row_bytes(dtype, cols); a backend that re-lays the matrix
  // out in a different size says so.
  virtual uint64_t read_bytes() const { return static_cast<uint64_t>(rows_) * dtype_row_bytes(dtype_, cols_); }

 protected:
  DeviceMatrix(DType dtype, int64_t rows, int64_t cols, bool reads_source = true)
      : dtype_(dtype), rows_(rows), cols_(cols), reads_source_(reads_source) {}

 private:
  DType dtype_;
  int64_t rows_;
  int64_t cols_;
  bool reads_source_;
};

// How a prepared matrix is read: multiplied (matmul), multiplied into the
// logits (the output head: a backend keeps its activations as exact as its
// plain matmul's, never rounds them to a narrower type for speed, since that
// error lands on every logit and the head runs for few rows at prefill), or
// row-gathered (embedding lookup, which reads one row per token and keeps
// the file layout).
enum class MatrixUse { kMatmul, kLogits, kEmbedding };

// The paged KV cache's memory on a device: per layer, K and V of
// spec.num_blocks * spec.block_size slots, n_kv_heads, head_dim in
// spec.dtype (kv/kv_cache_spec.h), each block's slots in one contiguous
// range of spec.block_size rows' bytes; how a block lays out its slots is
// the backend's (the CPU backend's: backend/cpu/kv_buffer.h). Which slots
// belong to which sequence is host logic (kv/); the device only sees slot
// mappings and block tables.
class KvCache {
 public:
  virtual ~KvCache() = default;
  virtual const KvCacheSpec& spec() const = 0;
};

// One matmul of a group that shares its input: y[rows, w.rows()] = x · wᵀ.
struct MatmulOp {
  const DeviceMatrix* w = nullptr;
  float* y = nullptr;  // device
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Registry name ("cpu") and a one-line description of how it runs
  // (e.g. "cpu avx512, 2 threads, tile kernels"), for logs and headers.
  virtual std::string name() const = 0;
  virtual std::string describe() const = 0;

  // Whether matmul / embedding accept weights of type t in any layout.
  virtual bool supports_weight(DType t) const = 0;

  // --- memory ---------------------------------------------------------
  // Errors: kResourceExhausted when the device cannot hold `bytes`.
  virtual Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes, BufferKind kind) = 0;
  // Copies host bytes to a device address / device bytes to host memory.
  // download() waits for every op issued before it.
  virtual void upload(void* dst_device, const void* src_host, size_t bytes) = 0;
  virtual void download(void* dst_host, const void* src_device, size_t bytes) = 0;
  // Waits until every issued op has finished.
  virtual void synchronize() = 0;
  // Read bandwidth of the memory the weights live in, bytes/s, measured now
  // (best of a few passes over a buffer far larger than any cache; the first
  // call allocates it): the decode roofline of `tessera bench`. 0 when the
  // backend cannot measure it.
  virtual double measure_read_bandwidth() = 0;

  // Makes `w` (host, file layout; it must stay valid for the matrix's life
  // when the backend keeps reading it, as the CPU backend does for layouts
  // it does not change) computable by this backend. May copy or re-lay-out
  // it; may release the host pages it replaced (a mapped file's pages stay
  // valid, they are only dropped from residency). Errors
  // (kUnimplemented): a dtype this backend cannot run, naming it.
  virtual Result<std::unique_ptr<DeviceMatrix>> prepare_matrix(const WeightView& w, MatrixUse use) = 0;

  // Allocates the KV cache memory for `spec` (spec.total_bytes()).
  // Errors: kResourceExhausted; kUnimplemented for a KV dtype it lacks.
  virtual Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheSpec& spec) = 0;
  // Copies block `src`'s K/V rows of every layer into block `dst`
  // (copy-on-write of a forked sequence's partial block).
  virtual void copy_kv_block(KvCache& kv, int32_t src, int32_t dst) = 0;

  // --- one forward step -------------------------------------------------
  // Stages the step's inputs (token ids, positions, slot mapping, block
  // tables, logits rows); the step ops below read them until the next call.
  // `b` must be valid for the cache the ops are given (Transformer::validate).
  virtual void set_batch(const ForwardBatch& b) = 0;

  // x[n_tokens, table.cols()] = rows token_ids[t] of `table` (as f32).
  virtual void embedding(const DeviceMatrix& table, float* x) = 0;
  // y[r] = x[r] / sqrt(mean(x[r]²) + eps) * w for r < rows, over n elements
  // (RMSNorm, Zhang & Sennrich 2019, arXiv:1910.07467). w: device [n]. y may alias x.
  virtual void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) = 0;
  // y[i] = RMSNorm(x[logits_rows[i]]) for the staged batch's logits rows:
  // the final norm, computed only for rows whose logits are needed.
  virtual void rmsnorm_logits_rows(const float* x, const float* w, float* y, int64_t n, float eps) = 0;
  // For every op: op.y[rows, op.w->rows()] = x[rows, cols] · op.wᵀ, all
  // ops sharing x and cols (Q/K/V; gate/up). Each row of y is computed the
  // same way whatever `rows` is (batch invariance; backend/cpu/matmul.h).
  virtual void matmul(std::span<const MatmulOp> ops, const float* x, int64_t rows) = 0;
  // x[r] += b for r < rows over n elements (b: device [n]; QKV biases).
  virtual void add_bias(float* x, const float* b, int64_t rows, int64_t n) = 0;
  // Rotates x[n_tokens, p.n_heads, p.head_dim] in place, token t at the
  // staged position positions[t].
  virtual void rope(float* x, const RopeParams& p) = 0;
  // Writes k and v ([n_tokens, n_kv_heads * head_dim], f32) of `layer` into
  // the cache at the staged slot mapping, converted to the cache dtype.
  virtual void kv_write(KvCache& kv, int layer, const float* k, const float* v) = 0;
  // out[t] = softmax(q[t] · Kᵀ · scale) · V over positions 0..positions[t]
  // of token t's sequence, read through its block table (causal paged
  // attention, Kwon et al. 2023, arXiv:2309.06180; online softmax,
  // arXiv:2205.14135). q, out: [n_tokens, n_heads, head_dim]. This step's
  // K/V must already be written.
  virtual void paged_attention(const KvCache& kv, int layer, const AttentionShape& shape, const float* q,
                               float* out) = 0;
  // out[r] = silu(gate[r]) * up[r] over n elements (SwiGLU, arXiv:2002.05202).
  // out may alias gate.
  virtual void silu_mul(const float* gate, const float* up, float* out, int64_t rows, int64_t n) = 0;
  // x[i] += y[i] for i < n (residual add).
  virtual void add(float* x, const float* y, int64_t n) = 0;
};

}  // namespace tessera
