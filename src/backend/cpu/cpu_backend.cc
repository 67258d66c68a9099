#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "backend/cpu/bandwidth.h"
#include "backend/cpu/gemm_i16_ref.h"
#include "backend/cpu/kv_buffer.h"
#include "backend/cpu/paged_attention.h"
#include "backend/cpu/weight_layout.h"
#include "core/check.h"
#include "core/quant_ref.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

// Host memory, 64-byte aligned (one cache line; the widest vector load).
class CpuBuffer final : public DeviceBuffer {
 public:
  static std::unique_ptr<CpuBuffer> create(size_t bytes) {
    auto* p = static_cast<uint8_t*>(::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(64), std::nothrow));
    if (p == nullptr) return nullptr;
    return std::unique_ptr<CpuBuffer>(new CpuBuffer(p, bytes));
  }
  ~CpuBuffer() override { ::operator delete(data_, std::align_val_t(64)); }
  void* data() override { return data_; }
  size_t bytes() const override { return bytes_; }

 private:
  CpuBuffer(uint8_t* p, size_t bytes) : data_(p), bytes_(bytes) {}
  uint8_t* data_;
  size_t bytes_;
};

// A matrix as matmul reads it: the file's bytes, or a re-laid-out copy.
class CpuMatrix final : public DeviceMatrix {
 public:
  CpuMatrix(const MatrixView& view, WeightStorage storage)
      : DeviceMatrix(view.dtype, view.rows, view.cols, storage.empty()), view_(view), storage_(std::move(storage)) {}
  const MatrixView& view() const { return view_; }
  // Int16 panels read 2 bytes per weight plus an f32 scale per 64 columns
  // (gemm_i16_ref.h); every other layout keeps the file's bytes per row.
  uint64_t read_bytes() const override {
    if (view_.layout != WeightLayout::kI16Panel) return DeviceMatrix::read_bytes();
    return static_cast<uint64_t>(rows()) * static_cast<uint64_t>(packed_i16_row_bytes(cols()));
  }

 private:
  MatrixView view_;
  WeightStorage storage_;  // owns view_.data when it is a copy
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(const BackendOptions& o, const Kernels& k) : options_(o), k_(k), pool_(o.threads) {}

  std::string name() const override { return "cpu"; }
  std::string describe() const override {
    std::string s = std::string("cpu ") + isa_name(k_.isa) + ", " + std::to_string(options_.threads) +
                    (options_.threads == 1 ? " thread" : " threads") +
                    (k_.gemm != nullptr ? ", tile kernels" : ", no tile kernels");
    for (const std::string& note : weight_notes_) s += ", " + note;
    if (k_.decode_streams != kDefaultDecodeStreams) {
      s += ", " + std::to_string(k_.decode_streams) + (k_.decode_streams == 1 ? " decode stream" : " decode streams");
    }
    return s;
  }
  bool supports_weight(DType t) const override { return t != DType::kQ8_K; }

  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes, BufferKind) override {
    auto b = CpuBuffer::create(bytes);
    if (!b) return resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    return std::unique_ptr<DeviceBuffer>(std::move(b));
  }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void synchronize() override {}
  double measure_read_bandwidth() override {
    if (!probe_) probe_ = std::make_unique<BandwidthProbe>(pool_);  // on the threads the ops run on
    return probe_->measure();
  }

  Result<std::unique_ptr<DeviceMatrix>> prepare_matrix(const WeightView& w, MatrixUse use) override {
    if (!supports_weight(w.dtype)) {
      return unimplemented(std::string("the cpu backend cannot compute with ") + dtype_name(w.dtype) + " weights");
    }
    MatrixView view{w.dtype, w.data, w.rows, w.cols};
    view.f32_activations = use == MatrixUse::kLogits;
    WeightStorage storage;
    // Embedding rows are dequantized one at a time and keep the file layout.
    const MatrixView out =
        use == MatrixUse::kEmbedding ? view : cpu::prepare_matrix(k_, view, pool_, storage, half_inexact());
    // The inexact half-precision paths this model's matrices took, once each.
    std::string note;
    if (w.dtype == DType::kF16 && out.dtype == DType::kBF16) note = "f16 weights as bf16";
    if (out.layout == cpu::WeightLayout::kI16Panel) note = std::string(dtype_name(w.dtype)) + " weights as int16";
    if (!note.empty() && std::find(weight_notes_.begin(), weight_notes_.end(), note) == weight_notes_.end()) {
      weight_notes_.push_back(note);
    }
    return std::unique_ptr<DeviceMatrix>(new CpuMatrix(out, std::move(storage)));
  }

  Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheSpec& spec) override {
    TESSERA_ASSIGN_OR_RETURN(auto kv, KvBuffer::create(spec));
    return std::unique_ptr<KvCache>(std::move(kv));
  }
  void copy_kv_block(KvCache& kv, int32_t src, int32_t dst) override { buf(kv).copy_block(src, dst); }

  void set_batch(const ForwardBatch& b) override { batch_ = &b; }

  void embedding(const DeviceMatrix& table, float* x) override {
    const MatrixView& emb = view(table);
    const size_t row_bytes = dtype_row_bytes(emb.dtype, emb.cols);
    const int32_t n = batch_->n_tokens();
    for (int32_t t = 0; t < n; ++t) {
      const auto* row = static_cast<const uint8_t*>(emb.data) +
                        static_cast<size_t>(batch_->token_ids[static_cast<size_t>(t)]) * row_bytes;
      dequantize_row(emb.dtype, row, x + static_cast<int64_t>(t) * emb.cols, emb.cols);
    }
  }
  void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) override {
    for (int64_t r = 0; r < rows; ++r) k_.rmsnorm(x + r * n, w, y + r * n, n, eps);
  }
  void rmsnorm_logits_rows(const float* x, const float* w, float* y, int64_t n, float eps) override {
    const auto& rows = batch_->logits_rows;
    for (size_t i = 0; i < rows.size(); ++i) {
      k_.rmsnorm(x + static_cast<int64_t>(rows[i]) * n, w, y + static_cast<int64_t>(i) * n, n, eps);
    }
  }
  void matmul(std::span<const MatmulOp> ops, const float* x, int64_t rows) override {
    std::array<MatmulTarget, 4> small{};
    std::vector<MatmulTarget> large;
    MatmulTarget* targets = small.data();
    if (ops.size() > small.size()) {
      large.resize(ops.size());
      targets = large.data();
    }
    for (size_t i = 0; i < ops.size(); ++i) targets[i] = {view(*ops[i].w), ops[i].y};
    matmul_multi(pool_, k_, std::span<const MatmulTarget>(targets, ops.size()), x, rows, scratch_);
  }
  void add_bias(float* x, const float* b, int64_t rows, int64_t n) override {
    for (int64_t r = 0; r < rows; ++r) {
      float* xr = x + r * n;
      for (int64_t i = 0; i < n; ++i) xr[i] += b[i];
    }
  }
  void rope(float* x, const RopeParams& p) override {
    const int64_t row = static_cast<int64_t>(p.n_heads) * p.head_dim;
    const int32_t n = batch_->n_tokens();
    for (int32_t t = 0; t < n; ++t) {
      k_.rope(x + t * row, p.n_heads, p.head_dim, p.n_rot, batch_->positions[static_cast<size_t>(t)], p.inv_freq,
              p.style);
    }
  }
  void kv_write(KvCache& kv, int layer, const float* k, const float* v) override {
    KvBuffer& b = buf(kv);
    const int64_t row = static_cast<int64_t>(b.spec().n_kv_heads) * b.spec().head_dim;
    const int32_t n = batch_->n_tokens();
    for (int32_t t = 0; t < n; ++t) {
      b.store(k_, layer, batch_->slot_mapping[static_cast<size_t>(t)], k + t * row, v + t * row);
    }
  }
  void paged_attention(const KvCache& kv, int layer, const AttentionShape& shape, const float* q, float* out) override {
    cpu::paged_attention(pool_, k_, shape, q, batch_->positions.data(), batch_->seqs, buf(kv), layer, out);
  }
  void silu_mul(const float* gate, const float* up, float* out, int64_t rows, int64_t n) override {
    for (int64_t r = 0; r < rows; ++r) k_.silu_mul(gate + r * n, up + r * n, out + r * n, n);
  }
  void add(float* x, const float* y, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
  }

  const Kernels& kernels() const { return k_; }

 private:
  // Whether F16 matrices may take the table's inexact path, bf16 panels
  // (AVX512-BF16) or int16 panels (AVX2), and BF16 matrices int16 panels on
  // tables without AVX512-BF16: BackendOptions::f16_matmul.
  bool half_inexact() const {
    return options_.f16_matmul == F16Matmul::kAuto && k_.gemm != nullptr &&
           (k_.gemm->tile_bf16_dp != nullptr || k_.gemm->tile_i16 != nullptr);
  }
  static const MatrixView& view(const DeviceMatrix& m) { return static_cast<const CpuMatrix&>(m).view(); }
  static KvBuffer& buf(KvCache& kv) { return static_cast<KvBuffer&>(kv); }
  static const KvBuffer& buf(const KvCache& kv) { return static_cast<const KvBuffer&>(kv); }

  BackendOptions options_;
  Kernels k_;
  ThreadPool pool_;
  const ForwardBatch* batch_ = nullptr;  // the staged step (read in place)
  std::vector<uint8_t> scratch_;         // quantized activations for matmul
  // "f16 weights as bf16", "f16 weights as int16", "bf16 weights as int16":
  // each inexact path a prepared matrix took (describe()).
  std::vector<std::string> weight_notes_;
  std::unique_ptr<BandwidthProbe> probe_;  // 1 GiB, made on the first measurement
};

}  // namespace

Result<std::unique_ptr<Backend>> make_cpu_backend(const BackendOptions& o) {
  if (o.threads < 1) return invalid_argument("the cpu backend needs at least 1 thread");
  if (o.decode_streams < 1 || o.decode_streams > kMaxDecodeStreams) {
    return invalid_argument("decode streams must be 1.." + std::to_string(kMaxDecodeStreams));
  }
  const Isa isa = o.isa.value_or(best_isa());
  bool supported = false;
  for (Isa s : supported_isas()) supported = supported || s == isa;
  if (!supported) return invalid_argument(std::string("this CPU does not support the ") + isa_name(isa) + " path");
  return std::unique_ptr<Backend>(new CpuBackend(o, kernels_with(isa, o.tile_kernels, o.decode_streams)));
}

const Kernels& cpu_backend_kernels(const Backend& backend) {
  return static_cast<const CpuBackend&>(backend).kernels();
}

const MatrixView& cpu_matrix_view(const DeviceMatrix& m) {
  return static_cast<const CpuMatrix&>(m).view();
}

}  // namespace tessera::cpu
