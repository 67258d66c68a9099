// Non-finite weights (issue #17), on small GGUF files this test writes with
// the repo's GgufWriter: loading refuses an Inf/NaN block scale or norm value
// always, an Inf/NaN matrix value with check_tensors; `tessera quantize`
// refuses Inf/NaN input and values whose f16 scale would overflow, naming the
// tensor and row, and writes nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include "core/thread_pool.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "model/model.h"
#include "model/quantize_model.h"
#include "model/random_model.h"

namespace tessera {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tessera_wcheck_" + name + "_" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

RandomModelShape shape() {
  RandomModelShape s;
  s.name = "wcheck";
  s.n_vocab = 300;
  s.n_embd = 256;  // one Q4_K super-block per row
  s.n_layers = 2;
  s.n_ff = 256;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  return s;
}

// A random model of `dtype` at `path` with tensor `tensor`'s bytes passed through `edit`.
void write_edited(DType dtype, const std::string& path, const std::string& tensor,
                  const std::function<void(std::vector<uint8_t>&)>& edit) {
  const std::string clean = path + ".clean.gguf";
  ThreadPool pool(1);
  ASSERT_TRUE(write_random_model(shape(), dtype, 7, pool, clean).ok());
  auto in = GgufFile::open(clean);
  ASSERT_TRUE(in.ok());
  GgufWriter w;
  for (const GgufKeyValue& kv : in->metadata()) w.add_value(kv.key, kv.value);
  bool found = false;
  for (const GgufTensorInfo& t : in->tensors()) {
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    if (t.name == tensor) {
      edit(bytes);
      found = true;
    }
    w.add_tensor(t.name, t.shape, *t.dtype, std::move(bytes));
  }
  ASSERT_TRUE(found) << tensor;
  ASSERT_TRUE(w.write(path).ok());
  std::filesystem::remove(clean);
}

void set_f16(std::vector<uint8_t>& bytes, size_t offset, uint16_t bits) {
  std::memcpy(&bytes[offset], &bits, 2);
}
void set_f32(std::vector<uint8_t>& bytes, size_t index, float v) {
  std::memcpy(&bytes[index * 4], &v, 4);
}

constexpr uint16_t kF16Inf = 0x7c00, kF16NaN = 0x7e00;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void expect_error(const Status& st, const std::string& what) {
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find(what), std::string::npos) << st.message() << "\n  expected: " << what;
}

TEST(WeightCheck, LoadRefusesAnInfScaleOfAQ8_0Block) {
  const std::string p = temp_path("q8_scale");
  // Row 3, block 5 of 8 (256 columns): byte (3 * 8 + 5) * 34 is its f16 d.
  write_edited(DType::kQ8_0, p, "blk.1.attn_k.weight", [](auto& b) { set_f16(b, (3 * 8 + 5) * 34, kF16Inf); });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  expect_error(m.status(), p + ": tensor 'blk.1.attn_k.weight' row 3 block 5: scale d is +Inf");
  std::filesystem::remove(p);
}

TEST(WeightCheck, LoadRefusesANaNMinOfAQ4_KSuperBlock) {
  const std::string p = temp_path("q4k_dmin");
  // Row 6 (one 144-byte super-block per row): dmin at offset 2.
  write_edited(DType::kQ4_K, p, "blk.0.ffn_down.weight", [](auto& b) { set_f16(b, 6 * 144 + 2, kF16NaN); });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  expect_error(m.status(), "tensor 'blk.0.ffn_down.weight' row 6 block 0: scale dmin is NaN");
  std::filesystem::remove(p);
}

TEST(WeightCheck, LoadRefusesANaNNormWeight) {
  const std::string p = temp_path("norm");
  write_edited(DType::kQ8_0, p, "blk.0.attn_norm.weight", [](auto& b) { set_f32(b, 7, kNaN); });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  expect_error(m.status(), "tensor 'blk.0.attn_norm.weight' row 0 column 7: value is NaN");
  std::filesystem::remove(p);
}

TEST(WeightCheck, CheckTensorsFindsAnInfValueOfAnF16Matrix) {
  const std::string p = temp_path("f16_value");
  // blk.0.ffn_up.weight [256 rows of 256 columns] f16: row 9, column 10.
  write_edited(DType::kF16, p, "blk.0.ffn_up.weight", [](auto& b) { set_f16(b, (9 * 256 + 10) * 2, kF16Inf); });
  // The cheap check reads no value of a float matrix: the file loads...
  EXPECT_TRUE(Model::load(p).ok());
  // ...and --check-tensors finds it.
  LoadOptions o;
  o.check_tensors = true;
  auto m = Model::load(p, o);
  ASSERT_FALSE(m.ok());
  expect_error(m.status(), "tensor 'blk.0.ffn_up.weight' row 9 column 10: value is +Inf");
  std::filesystem::remove(p);
}

TEST(WeightCheck, CleanFilesPassEveryCheck) {
  LoadOptions o;
  o.check_tensors = true;
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const std::string p = temp_path(std::string("clean_") + std::string(dtype_name(t)));
    ThreadPool pool(1);
    ASSERT_TRUE(write_random_model(shape(), t, 3, pool, p).ok());
    auto m = Model::load(p, o);
    EXPECT_TRUE(m.ok()) << dtype_name(t) << ": " << m.status().to_string();
    std::filesystem::remove(p);
  }
}

// quantize_model on an f32 file with one edited matrix value.
Status quantize_edited(const std::string& name, float value, size_t index, const std::string& type,
                       const std::string& out) {
  const std::string in = temp_path(name);
  write_edited(DType::kF32, in, "blk.0.attn_q.weight", [&](auto& b) { set_f32(b, index, value); });
  ThreadPool pool(2);
  auto r = quantize_model(in, out, *quant_scheme_from_name(type), pool, {});
  std::filesystem::remove(in);
  return r.status();
}

TEST(QuantizeNonFinite, RefusesNaNAndInfInputNamingTensorRowAndColumn) {
  const std::string out = temp_path("nan_out");
  expect_error(quantize_edited("nan", kNaN, 2 * 256 + 3, "q8_0", out),
               "tensor 'blk.0.attn_q.weight' row 2 column 3: value is NaN; refusing to write " + out);
  EXPECT_FALSE(std::filesystem::exists(out));
  expect_error(quantize_edited("inf", -std::numeric_limits<float>::infinity(), 200 * 256 + 255, "q4_k_m", out),
               "tensor 'blk.0.attn_q.weight' row 200 column 255: value is -Inf");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(QuantizeNonFinite, RefusesValuesThatOverflowTheF16Scale) {
  const std::string out = temp_path("big_out");
  // Q8_0: d = max|x| / 127 must stay <= 65504, so |x| <= 8.3e6.
  expect_error(
      quantize_edited("big_q8", 1e7f, 4 * 256 + 40, "q8_0", out),
      "tensor 'blk.0.attn_q.weight' row 4 values up to |x| = 1e+07 (column 40) overflow the f16 scales of q8_0 "
      "(they would be stored as ");
  EXPECT_FALSE(std::filesystem::exists(out));
  // Q4_0: d = max / -8: |x| = 1e6 gives |d| = 125000.
  expect_error(quantize_edited("big_q4", -1e6f, 5 * 256, "q4_0", out),
               "row 5 values up to |x| = 1e+06 (column 0) overflow the f16 scales of q4_0");
  // F16 itself: 1e5 > 65504.
  expect_error(quantize_edited("big_f16", 1e5f, 6 * 256 + 1, "f16", out),
               "row 6 values up to |x| = 100000 (column 1) overflow the f16 scales of f16 (they would be stored as "
               "+Inf)");
  EXPECT_FALSE(std::filesystem::exists(out));
  // Just inside the range: 6e6 / 127 = 47244 is a finite f16; the file is written and passes --check-tensors.
  ASSERT_TRUE(quantize_edited("ok_q8", 6e6f, 4 * 256 + 40, "q8_0", out).ok());
  LoadOptions o;
  o.check_tensors = true;
  EXPECT_TRUE(Model::load(out, o).ok());
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace tessera
