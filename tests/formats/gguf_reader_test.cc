#include "formats/gguf_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gguf_test_util.h"
#include "test_support.h"

namespace tessera {
namespace {

using testing::RawGguf;
using testing::parse_bytes;

// Every tensor's bytes lie inside the file and after the data section start.
void expect_tensors_inside(const GgufFile& f, const uint8_t* base) {
  for (const GgufTensorInfo& t : f.tensors()) {
    EXPECT_GE(t.data, base + f.data_offset()) << t.name;
    EXPECT_LE(t.data + t.n_bytes, base + f.file_size()) << t.name;
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
  }
}

TEST(GgufReader, Stories260K) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  Result<GgufFile> r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = *r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.file_size(), 1185376u);
  EXPECT_EQ(f.data_offset(), 14176u);
  EXPECT_EQ(f.name(), path);
  EXPECT_EQ(f.metadata().size(), 19u);

  EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f.get_int("llama.block_count").value(), 5);
  EXPECT_EQ(f.get_int("llama.embedding_length").value(), 64);
  EXPECT_EQ(f.get_int("llama.feed_forward_length").value(), 172);
  EXPECT_EQ(f.get_int("llama.attention.head_count").value(), 8);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv").value(), 4);
  EXPECT_EQ(f.get_int("llama.context_length").value(), 2048);
  EXPECT_EQ(f.get_int("llama.rope.dimension_count").value(), 8);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("llama.attention.layer_norm_rms_epsilon").value()), 1e-5f);
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id").value(), 1);
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id").value(), 2);
  EXPECT_EQ(f.get_int("tokenizer.ggml.padding_token_id").value(), 4294967295);  // uint32 -1
  EXPECT_EQ(f.find("tokenizer.ggml.padding_token_id")->type, GgufType::kUint32);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "llama");

  const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens").value();
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").value().size(), 512u);
  const std::vector<int64_t> types = f.get_int_array("tokenizer.ggml.token_type").value();
  ASSERT_EQ(types.size(), 512u);
  EXPECT_EQ(types[0], 2);  // unknown
  EXPECT_EQ(types[1], 3);  // control
  EXPECT_EQ(types[3], 6);  // byte

  ASSERT_EQ(f.tensors().size(), 48u);  // 3 global + 5 blocks x 9
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->ggml_type, 0u);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->n_elements, 64 * 512);
  EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);
  EXPECT_EQ(emb->offset, 0u);
  const GgufTensorInfo* down = f.find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{172, 64}));
  const GgufTensorInfo* norm = f.find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(f.find_tensor("no.such.tensor"), nullptr);
  EXPECT_EQ(f.find("no.such.key"), nullptr);

  // The last tensor ends exactly at the end of the file.
  uint64_t end = 0;
  for (const GgufTensorInfo& t : f.tensors()) end = std::max(end, f.data_offset() + t.offset + t.n_bytes);
  EXPECT_EQ(end, f.file_size());
  expect_tensors_inside(f, emb->data - f.data_offset());
}

TEST(GgufReader, LlamaTinyRandom) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/llama-2-tiny-random.gguf");
  Result<GgufFile> r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = *r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f.get_string("general.name").value(), "LLaMA v2");
  EXPECT_EQ(f.get_int("llama.block_count").value(), 1);
  EXPECT_EQ(f.get_int("llama.embedding_length").value(), 8);
  EXPECT_EQ(f.get_int("llama.feed_forward_length").value(), 32);
  EXPECT_EQ(f.get_int("llama.attention.head_count").value(), 2);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv").value(), 2);
  EXPECT_EQ(f.get_int("llama.context_length").value(), 4096);
  EXPECT_EQ(f.get_int("general.file_type").value(), 1);  // mostly f16
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").value().size(), 32000u);

  ASSERT_EQ(f.tensors().size(), 12u);
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{8, 32000}));
  EXPECT_EQ(emb->ggml_type, 1u);
  EXPECT_EQ(emb->dtype, DType::kF16);
  EXPECT_EQ(emb->n_bytes, 8u * 32000u * 2u);
  const GgufTensorInfo* q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kF16);
  EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->dtype, DType::kF32);
  EXPECT_EQ(f.find_tensor("output.weight")->shape, (std::vector<int64_t>{8, 32000}));
  expect_tensors_inside(f, emb->data - f.data_offset());
}

TEST(GgufReader, VocabOnlyFileWithoutDataSection) {
  // Vocab-only files end right after the header (no padding): no tensors, so
  // the data section may start past the end of the file.
  TESSERA_REQUIRE_SHARED_FILE(path, "testdata/tokenizer/ggml-vocab-gpt-2.gguf");
  Result<GgufFile> r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->tensors().empty());
  EXPECT_GT(r->data_offset(), r->file_size());
  EXPECT_EQ(r->get_string_array("tokenizer.ggml.tokens").value().size(), 50257u);
  EXPECT_EQ(r->get_string_array("tokenizer.ggml.merges").value().size(), 50000u);
  EXPECT_EQ(r->get_string("tokenizer.ggml.pre").value(), "gpt-2");
}

TEST(GgufReader, GettersReportMissingKeysAndTypeMismatches) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  Result<GgufFile> r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const Status missing = r->get_int("llama.nope").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("llama.nope"), std::string::npos);
  EXPECT_NE(missing.message().find(path), std::string::npos);

  const Status wrong = r->get_int("general.architecture").status();
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("general.architecture"), std::string::npos);
  EXPECT_EQ(r->get_string("llama.block_count").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->get_bool("llama.block_count").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->get_string_array("tokenizer.ggml.scores").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->get_int_array("tokenizer.ggml.scores").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->get_float_array("tokenizer.ggml.tokens").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->get_float_array("llama.block_count").status().code(), StatusCode::kInvalidArgument);
  // Integers convert to floats, not the reverse.
  EXPECT_EQ(r->get_float("llama.block_count").value(), 5.0);
  EXPECT_EQ(r->get_int("llama.attention.layer_norm_rms_epsilon").status().code(), StatusCode::kInvalidArgument);
}

TEST(GgufReader, OpenMissingFileIsNotFound) {
  const Result<GgufFile> r = GgufFile::open("/nonexistent/dir/model.gguf");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(GgufReader, KnowsEveryStandardGgmlTypeLayout) {
  struct Row {
    uint32_t id;
    int64_t elems;
    uint64_t bytes;
  };
  const Row rows[] = {{0, 1, 4},      {1, 1, 2},      {2, 32, 18},    {3, 32, 20},   {6, 32, 22},
                      {7, 32, 24},    {8, 32, 34},    {9, 32, 36},    {10, 256, 84}, {11, 256, 110},
                      {12, 256, 144}, {13, 256, 176}, {14, 256, 210}, {15, 256, 292}, {24, 1, 1},
                      {25, 1, 2},     {26, 1, 4},     {27, 1, 8},     {28, 1, 8},    {30, 1, 2}};
  for (const Row& row : rows) {
    const std::optional<GgmlTypeLayout> l = ggml_type_layout(row.id);
    ASSERT_TRUE(l.has_value()) << row.id;
    EXPECT_EQ(l->block_elems, row.elems) << ggml_type_name(row.id);
    EXPECT_EQ(l->block_bytes, row.bytes) << ggml_type_name(row.id);
  }
  // The layouts agree with tessera's own types.
  for (DType t : kAllDTypes) {
    const std::optional<GgmlTypeLayout> l = ggml_type_layout(dtype_to_ggml(t));
    ASSERT_TRUE(l.has_value());
    EXPECT_EQ(l->block_elems, dtype_block_elems(t));
    EXPECT_EQ(l->block_bytes, dtype_block_bytes(t));
  }
  EXPECT_FALSE(ggml_type_layout(4).has_value());  // q4_2, removed
  EXPECT_FALSE(ggml_type_layout(5).has_value());
  EXPECT_FALSE(ggml_type_layout(1000).has_value());
}

TEST(GgufReader, ListsKQuantAndIntegerTensors) {
  RawGguf raw;
  raw.header(4, 0)
      .tensor("q4k", {512, 2}, 12, 0)     // 4 blocks of 144 bytes
      .tensor("q6k", {256}, 14, 576)      // 210 bytes
      .tensor("ints", {3}, 26, 800)       // 12 bytes
      .tensor("q80", {64}, 8, 832)        // 68 bytes
      .pad()
      .zeros(900);
  const Result<GgufFile> r = parse_bytes(raw.bytes());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->tensors()[0].n_bytes, 576u);
  EXPECT_EQ(r->tensors()[0].dtype, DType::kQ4_K);  // K-quants load as is (issue #7)
  EXPECT_EQ(r->tensors()[1].n_bytes, 210u);
  EXPECT_EQ(r->tensors()[1].dtype, DType::kQ6_K);
  EXPECT_EQ(r->tensors()[2].n_bytes, 12u);
  EXPECT_FALSE(r->tensors()[2].dtype.has_value());
  EXPECT_EQ(r->tensors()[3].n_bytes, 68u);
  EXPECT_EQ(r->tensors()[3].dtype, DType::kQ8_0);
}

TEST(GgufReader, ZeroDimTensorIsAScalar) {
  RawGguf raw;
  raw.header(1, 0).tensor("s", {}, 0, 0).pad().zeros(4);
  const Result<GgufFile> r = parse_bytes(raw.bytes());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->tensors()[0].shape.empty());
  EXPECT_EQ(r->tensors()[0].n_elements, 1);
  EXPECT_EQ(r->tensors()[0].n_bytes, 4u);
}

TEST(GgufReader, ReadsVersion2) {
  RawGguf raw;
  raw.header(0, 1, 2).kv_u32("a", 7);
  const Result<GgufFile> r = parse_bytes(raw.bytes());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->version(), 2u);
  EXPECT_EQ(r->get_int("a").value(), 7);
}

TEST(GgufValue, ConversionsAndPrinting) {
  GgufValue u;
  u.type = GgufType::kUint64;
  u.u = std::numeric_limits<uint64_t>::max();
  u.i = -1;
  EXPECT_FALSE(u.as_int().has_value());  // does not fit int64
  EXPECT_EQ(u.as_float(), 18446744073709551615.0);
  EXPECT_EQ(u.to_string(), "18446744073709551615");

  GgufValue s;
  s.type = GgufType::kInt8;
  s.i = -5;
  EXPECT_EQ(s.as_int(), -5);
  EXPECT_EQ(s.to_string(), "-5");

  GgufValue b;
  b.type = GgufType::kBool;
  b.i = b.u = 1;
  EXPECT_EQ(b.as_int(), 1);
  EXPECT_FALSE(b.as_float().has_value());
  EXPECT_EQ(b.to_string(), "true");

  GgufValue f;
  f.type = GgufType::kFloat32;
  f.f = 0.5;
  EXPECT_FALSE(f.as_int().has_value());
  EXPECT_EQ(f.as_float(), 0.5);
  EXPECT_EQ(f.to_string(), "0.5");

  GgufValue str;
  str.type = GgufType::kString;
  str.str = "a\"b\n";
  EXPECT_FALSE(str.as_int().has_value());
  EXPECT_EQ(str.to_string(), "\"a\\\"b\\n\"");

  GgufValue arr;
  arr.type = GgufType::kArray;
  arr.array_type = GgufType::kInt8;
  for (int k = 0; k < 5; ++k) arr.array.push_back(s);
  EXPECT_EQ(arr.to_string(2), "[-5, -5, ... (5 items)]");
  EXPECT_EQ(arr.to_string(), "[-5, -5, -5, -5, -5]");
  arr.array.clear();
  EXPECT_EQ(arr.to_string(), "[]");
  EXPECT_STREQ(gguf_type_name(GgufType::kFloat64), "float64");
}

}  // namespace
}  // namespace tessera
