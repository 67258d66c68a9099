// The model graph reaches the device only through the backend contract: a
// checking backend wraps the CPU one, refuses any device pointer that is not
// inside memory it handed out (with room for the op's shape), checks every
// op's shapes against the staged batch, and counts the ops. The stories260K
// golden then runs through the engine on it and must give the reference text,
// with an op count that the graph's structure predicts.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/registry.h"
#include "engine/engine_core.h"
#include "test_support.h"

namespace tessera {
namespace {

class CheckingBackend final : public Backend {
 public:
  explicit CheckingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  std::vector<std::string> violations;
  std::map<std::string, int64_t> ops;

  std::string name() const override { return "checking(" + inner_->name() + ")"; }
  std::string describe() const override { return "checking " + inner_->describe(); }
  bool supports_weight(DType t) const override { return inner_->supports_weight(t); }

  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes, BufferKind kind) override {
    TESSERA_ASSIGN_OR_RETURN(auto b, inner_->allocate(bytes, kind));
    regions_.push_back({static_cast<const uint8_t*>(b->data()), bytes, b.get()});
    return std::unique_ptr<DeviceBuffer>(new Tracked(std::move(b), this));
  }
  void upload(void* dst, const void* src, size_t bytes) override {
    check(dst, bytes, "upload");
    inner_->upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    check(src, bytes, "download");
    inner_->download(dst, src, bytes);
  }
  void synchronize() override { inner_->synchronize(); }
  double measure_read_bandwidth() override { return inner_->measure_read_bandwidth(); }
  Result<std::unique_ptr<DeviceMatrix>> prepare_matrix(const WeightView& w, MatrixUse use) override {
    ++ops["prepare_matrix"];
    TESSERA_ASSIGN_OR_RETURN(auto m, inner_->prepare_matrix(w, use));
    if (m->rows() != w.rows || m->cols() != w.cols || m->dtype() != w.dtype) violations.push_back("prepared shape");
    matrices_.push_back(m.get());
    return m;
  }
  Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheSpec& spec) override {
    TESSERA_ASSIGN_OR_RETURN(auto kv, inner_->create_kv_cache(spec));
    kv_ = kv.get();
    return kv;
  }
  void copy_kv_block(KvCache& kv, int32_t src, int32_t dst) override {
    ++ops["copy_kv_block"];
    inner_->copy_kv_block(kv, src, dst);
  }
  void set_batch(const ForwardBatch& b) override {
    ++ops["set_batch"];
    batch_ = &b;
    inner_->set_batch(b);
  }
  void embedding(const DeviceMatrix& table, float* x) override {
    ++ops["embedding"];
    known(table);
    check(x, rows() * table.cols() * 4, "embedding x");
    inner_->embedding(table, x);
  }
  void rmsnorm(const float* x, const float* w, float* y, int64_t r, int64_t n, float eps) override {
    ++ops["rmsnorm"];
    check(x, r * n * 4, "rmsnorm x");
    check(w, n * 4, "rmsnorm w");
    check(y, r * n * 4, "rmsnorm y");
    if (r % rows() != 0) violations.push_back("rmsnorm rows not a multiple of the batch");
    inner_->rmsnorm(x, w, y, r, n, eps);
  }
  void rmsnorm_logits_rows(const float* x, const float* w, float* y, int64_t n, float eps) override {
    ++ops["rmsnorm_logits_rows"];
    check(x, rows() * n * 4, "final norm x");
    check(y, static_cast<int64_t>(batch_->logits_rows.size()) * n * 4, "final norm y");
    inner_->rmsnorm_logits_rows(x, w, y, n, eps);
  }
  void matmul(std::span<const MatmulOp> mm, const float* x, int64_t r) override {
    ops["matmul"] += static_cast<int64_t>(mm.size());
    for (const MatmulOp& op : mm) {
      known(*op.w);
      if (op.w->cols() != mm[0].w->cols()) violations.push_back("matmul group with different cols");
      check(x, r * op.w->cols() * 4, "matmul x");
      check(op.y, r * op.w->rows() * 4, "matmul y");
    }
    if (r != rows() && r != static_cast<int64_t>(batch_->logits_rows.size())) violations.push_back("matmul rows");
    inner_->matmul(mm, x, r);
  }
  void add_bias(float* x, const float* b, int64_t r, int64_t n) override {
    ++ops["add_bias"];
    check(x, r * n * 4, "bias x");
    check(b, n * 4, "bias b");
    inner_->add_bias(x, b, r, n);
  }
  void rope(float* x, const RopeParams& p) override {
    ++ops["rope"];
    check(x, rows() * p.n_heads * p.head_dim * 4, "rope x");
    if (p.n_rot > p.head_dim || p.n_rot % 2 != 0) violations.push_back("rope n_rot");
    inner_->rope(x, p);
  }
  void kv_write(KvCache& kv, int layer, const float* k, const float* v) override {
    ++ops["kv_write"];
    if (&kv != kv_ || layer < 0 || layer >= kv.spec().n_layers) violations.push_back("kv_write cache/layer");
    const int64_t row = static_cast<int64_t>(kv.spec().n_kv_heads) * kv.spec().head_dim;
    check(k, rows() * row * 4, "kv_write k");
    check(v, rows() * row * 4, "kv_write v");
    inner_->kv_write(kv, layer, k, v);
  }
  void paged_attention(const KvCache& kv, int layer, const AttentionShape& s, const float* q, float* out) override {
    ++ops["paged_attention"];
    if (&kv != kv_ || s.n_kv_heads != kv.spec().n_kv_heads || s.head_dim != kv.spec().head_dim ||
        s.n_heads % s.n_kv_heads != 0) {
      violations.push_back("attention shape");
    }
    check(q, rows() * s.n_heads * s.head_dim * 4, "attention q");
    check(out, rows() * s.n_heads * s.head_dim * 4, "attention out");
    inner_->paged_attention(kv, layer, s, q, out);
  }
  void silu_mul(const float* gate, const float* up, float* out, int64_t r, int64_t n) override {
    ++ops["silu_mul"];
    check(gate, r * n * 4, "silu gate");
    check(up, r * n * 4, "silu up");
    check(out, r * n * 4, "silu out");
    inner_->silu_mul(gate, up, out, r, n);
  }
  void add(float* x, const float* y, int64_t n) override {
    ++ops["add"];
    check(x, n * 4, "add x");
    check(y, n * 4, "add y");
    inner_->add(x, y, n);
  }

 private:
  struct Region {
    const uint8_t* begin;
    size_t bytes;
    const DeviceBuffer* buffer;
  };
  // A buffer that forgets its region when freed (a later use is a violation).
  class Tracked final : public DeviceBuffer {
   public:
    Tracked(std::unique_ptr<DeviceBuffer> b, CheckingBackend* owner) : b_(std::move(b)), owner_(owner) {}
    ~Tracked() override { owner_->forget(b_.get()); }
    void* data() override { return b_->data(); }
    size_t bytes() const override { return b_->bytes(); }

   private:
    std::unique_ptr<DeviceBuffer> b_;
    CheckingBackend* owner_;
  };
  void forget(const DeviceBuffer* b) {
    std::erase_if(regions_, [b](const Region& r) { return r.buffer == b; });
  }
  int64_t rows() const { return batch_ == nullptr ? 0 : batch_->n_tokens(); }
  void check(const void* p, int64_t bytes, const char* what) {
    const auto* q = static_cast<const uint8_t*>(p);
    for (const Region& r : regions_) {
      if (q >= r.begin && q + bytes <= r.begin + r.bytes) return;
    }
    violations.push_back(std::string(what) + ": not inside a live device buffer");
  }
  void known(const DeviceMatrix& m) {
    for (const DeviceMatrix* k : matrices_) {
      if (k == &m) return;
    }
    violations.push_back("matrix not prepared by this backend");
  }

  std::unique_ptr<Backend> inner_;
  std::vector<Region> regions_;
  std::vector<const DeviceMatrix*> matrices_;
  const KvCache* kv_ = nullptr;
  const ForwardBatch* batch_ = nullptr;
};

TEST(BackendContract, StoriesGoldenRunsThroughTheContractOnly) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  auto cpu = create_backend(testing::cpu_backend(2));
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  auto owned = std::make_unique<CheckingBackend>(std::move(cpu).value());
  CheckingBackend* checking = owned.get();
  EngineConfig cfg;
  cfg.ctx_size = 256;
  auto engine = EngineCore::create(m, cfg, std::move(owned));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->backend().name(), "checking(cpu)");

  GenerationOptions opts;
  opts.max_tokens = 64;
  opts.sampling.temperature = 0;
  std::string text;
  bool finished = false;
  auto id = (*engine)->submit(m.tokenizer().encode("Once upon a time", true), opts, [&](const RequestEvent& ev) {
    text += ev.step.text;
    if (ev.request_finished) {
      finished = true;
      EXPECT_TRUE(ev.error.ok()) << ev.error.to_string();
    }
  });
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  (*engine)->run_until_idle();
  ASSERT_TRUE(finished);
  EXPECT_EQ(text,
            ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
            "red ball. She wanted to play with it, but it was too high.\nLily's mom said");
  for (const std::string& v : checking->violations) ADD_FAILURE() << v;

  // One prefill step (5 prompt tokens) and 63 decode steps; per step and
  // layer: 2 norms, Q/K/V + O + gate/up + down = 7 matmuls, 2 ropes, one KV
  // write, one attention, one SwiGLU, 2 residual adds; per step the
  // embedding, the final norm and the output head.
  const int64_t steps = 64;
  const int64_t layers = m.config().n_layers;
  auto& ops = checking->ops;
  EXPECT_EQ(ops["set_batch"], steps);
  EXPECT_EQ(ops["embedding"], steps);
  EXPECT_EQ(ops["rmsnorm"], steps * layers * 2);
  EXPECT_EQ(ops["matmul"], steps * (layers * 7 + 1));
  EXPECT_EQ(ops["rope"], steps * layers * 2);
  EXPECT_EQ(ops["kv_write"], steps * layers);
  EXPECT_EQ(ops["paged_attention"], steps * layers);
  EXPECT_EQ(ops["silu_mul"], steps * layers);
  EXPECT_EQ(ops["add"], steps * layers * 2);
  EXPECT_EQ(ops["rmsnorm_logits_rows"], steps);
  EXPECT_EQ(ops["prepare_matrix"], layers * 7 + 2);
}

TEST(BackendContract, UnknownDeviceIsOneClearError) {
  BackendOptions o;
  o.device = "tpu";
  auto b = create_backend(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("unknown device 'tpu' (this build has: cpu)"), std::string::npos)
      << b.status().message();
}

TEST(BackendContract, BadCpuOptionsAreErrors) {
  BackendOptions o;
  o.threads = 0;
  EXPECT_EQ(create_backend(o).status().code(), StatusCode::kInvalidArgument);
  o.threads = 1;
  o.decode_streams = 5;
  EXPECT_EQ(create_backend(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
