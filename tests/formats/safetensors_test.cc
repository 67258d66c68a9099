// Safetensors reader: the tiny Hugging Face fixtures with real values,
// synthesized files for every error path, truncation and byte mutations
// (never a crash, an out-of-bounds read or a huge allocation: run under
// ASan+UBSan with TESSERA_SANITIZE=ON), and sharded checkpoints in a temp dir.
#include "formats/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// Header size + header + buffer.
std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& buffer) {
  std::vector<uint8_t> out;
  const uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>(n >> (8 * k)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

std::vector<uint8_t> make_file(const std::string& header, size_t buffer_bytes) {
  return make_file(header, std::vector<uint8_t>(buffer_bytes, 0));
}

struct Spec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A well-formed file with the tensors laid out back to back.
std::vector<uint8_t> write_file(const std::vector<Spec>& specs, const std::string& metadata_json = "") {
  std::string h = "{";
  std::vector<uint8_t> buffer;
  if (!metadata_json.empty()) h += "\"__metadata__\":" + metadata_json;
  for (const Spec& s : specs) {
    if (h.size() > 1) h += ",";
    h += "\"" + s.name + "\":{\"dtype\":\"" + s.dtype + "\",\"shape\":[";
    for (size_t k = 0; k < s.shape.size(); ++k) {
      if (k > 0) h += ",";
      h += std::to_string(s.shape[k]);
    }
    h += "],\"data_offsets\":[" + std::to_string(buffer.size()) + "," + std::to_string(buffer.size() + s.bytes.size()) +
         "]}";
    buffer.insert(buffer.end(), s.bytes.begin(), s.bytes.end());
  }
  h += "}";
  while (h.size() % 8 != 0) h += ' ';  // writers pad the header with spaces
  return make_file(h, buffer);
}

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = static_cast<uint8_t>(start + k);
  return v;
}

std::vector<uint8_t> small_file() {
  return write_file({{"a", "F32", {2, 3}, iota_bytes(24, 1)},
                     {"b.weight", "F16", {4}, iota_bytes(8, 100)},
                     {"c", "BF16", {}, iota_bytes(2, 200)},
                     {"empty", "F32", {0, 5}, {}}},
                    R"({"format":"pt","k":"v"})");
}

// Parses the first `n` bytes of `b` from a heap copy of exactly n bytes, so
// that ASan sees any read past the end; `keep` holds the copy.
Result<SafetensorsFile> parse_copy(const std::vector<uint8_t>& b, size_t n, std::unique_ptr<uint8_t[]>& keep,
                                   const std::string& name = "test.safetensors") {
  keep = std::make_unique<uint8_t[]>(n == 0 ? 1 : n);
  if (n > 0) std::memcpy(keep.get(), b.data(), n);
  return SafetensorsFile::parse(keep.get(), n, name);
}

Result<SafetensorsFile> parse_all(const std::vector<uint8_t>& b, std::unique_ptr<uint8_t[]>& keep) {
  return parse_copy(b, b.size(), keep);
}

::testing::AssertionResult fails_with(const Status& s, StatusCode code, std::initializer_list<std::string> needles) {
  if (s.ok()) return ::testing::AssertionFailure() << "succeeded";
  if (s.code() != code) return ::testing::AssertionFailure() << "wrong code: " << s.to_string();
  for (const std::string& n : needles) {
    if (s.message().find(n) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << n << "': " << s.message();
    }
  }
  return ::testing::AssertionSuccess();
}

// Parses `header` (with a zeroed buffer) and checks the error.
::testing::AssertionResult header_fails(const std::string& header, size_t buffer_bytes, StatusCode code,
                                        std::initializer_list<std::string> needles) {
  std::unique_ptr<uint8_t[]> keep;
  const Result<SafetensorsFile> r = parse_all(make_file(header, buffer_bytes), keep);
  ::testing::AssertionResult res = fails_with(r.status(), code, needles);
  if (res && r.status().message().rfind("test.safetensors: ", 0) != 0) {
    return ::testing::AssertionFailure() << "message does not start with the file name: " << r.status().message();
  }
  return res << " (header " << header << ")";
}

// Either parses with every tensor inside the buffer (first and last byte
// read), or fails with a message that starts with the name.
void expect_safe(const Result<SafetensorsFile>& r, const uint8_t* base, size_t size, const std::string& trace) {
  if (!r.ok()) {
    EXPECT_EQ(r.status().message().rfind("test.safetensors: ", 0), 0u) << trace << ": " << r.status().message();
    return;
  }
  for (const SafetensorsTensor& t : r->tensors()) {
    ASSERT_GE(t.data, base) << trace;
    ASSERT_LE(t.n_bytes, size) << trace;
    ASSERT_LE(t.data + t.n_bytes, base + size) << trace;
    if (t.n_bytes > 0) {
      volatile uint8_t first = t.data[0];
      volatile uint8_t last = t.data[t.n_bytes - 1];
      (void)first;
      (void)last;
    }
    ASSERT_EQ(r->find(t.name), &t) << trace;
  }
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> as_f32(const SafetensorsTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements));
  std::memcpy(v.data(), t.data, t.n_bytes);
  return v;
}

std::vector<uint16_t> as_u16(const SafetensorsTensor& t) {
  std::vector<uint16_t> v(static_cast<size_t>(t.n_elements));
  std::memcpy(v.data(), t.data, t.n_bytes);
  return v;
}

// ---------------------------------------------------------------- fixtures

const char* const kFixtures[] = {"llama3_rope_scaling", "llama_gqa",  "llama_gqa_bf16", "mistral",
                                 "phi3_fused",          "qwen2_bias", "qwen3_qknorm"};

TEST(Safetensors, EveryFixtureOpensAndTilesItsBuffer) {
  for (const char* fixture : kFixtures) {
    SCOPED_TRACE(fixture);
    TESSERA_REQUIRE_SHARED_FILE(path, std::string("fixtures/hf/") + fixture + "/model.safetensors");
    const Result<SafetensorsFile> f = SafetensorsFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->metadata().at("format"), "pt");
    ASSERT_FALSE(f->tensors().empty());
    const DType want = std::string(fixture) == "llama_gqa_bf16" ? DType::kBF16 : DType::kF32;
    uint64_t total = 0;
    for (const SafetensorsTensor& t : f->tensors()) {
      EXPECT_EQ(t.dtype, want) << t.name;
      int64_t n = 1;
      for (const int64_t d : t.shape) n *= d;
      EXPECT_EQ(t.n_elements, n) << t.name;
      EXPECT_EQ(t.n_bytes, static_cast<uint64_t>(n) * dtype_block_bytes(want)) << t.name;
      EXPECT_EQ(f->find(t.name), &t);
      total += t.n_bytes;
    }
    // The reference writer lays tensors out back to back up to the end.
    EXPECT_EQ(f->data_offset() + total, f->file_size());
    const SafetensorsTensor* emb = f->find("model.embed_tokens.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
    EXPECT_EQ(f->find("model.embed_tokens"), nullptr);

    const Result<SafetensorsCheckpoint> ck = SafetensorsCheckpoint::open_dir(fs::path(path).parent_path().string());
    ASSERT_TRUE(ck.ok()) << ck.status().to_string();
    ASSERT_EQ(ck->tensors().size(), f->tensors().size());
    for (size_t k = 1; k < ck->tensors().size(); ++k) EXPECT_LT(ck->tensors()[k - 1]->name, ck->tensors()[k]->name);
    EXPECT_EQ(ck->find("model.embed_tokens.weight")->n_bytes, emb->n_bytes);
  }
}

TEST(Safetensors, LlamaGqaValues) {
  TESSERA_REQUIRE_SHARED_FILE(path, "fixtures/hf/llama_gqa/model.safetensors");
  const Result<SafetensorsFile> f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors().size(), 21u);  // embed, 2 layers x 9, final norm, lm_head
  EXPECT_EQ(f->header_size(), 2144u);
  EXPECT_EQ(f->metadata().size(), 1u);

  const SafetensorsTensor* emb = f->find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->n_elements, 512 * 64);
  EXPECT_EQ(emb->n_bytes, 131072u);
  const std::vector<float> e = as_f32(*emb);
  EXPECT_EQ(e[0], 0.044580843299627304f);
  EXPECT_EQ(e[1], 0.05736026540398598f);
  EXPECT_EQ(e[2], -0.0212037842720747f);

  const SafetensorsTensor* k = f->find("model.layers.0.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{32, 64}));  // 4 kv heads x head_dim 8 rows of hidden 64
  const SafetensorsTensor* down = f->find("model.layers.1.mlp.down_proj.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{64, 176}));
  const SafetensorsTensor* norm = f->find("model.layers.0.input_layernorm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(as_f32(*norm)[0], 0.8308526873588562f);
  ASSERT_NE(f->find("lm_head.weight"), nullptr);
  ASSERT_NE(f->find("model.norm.weight"), nullptr);
}

TEST(Safetensors, OtherArchitecturesShapes) {
  {
    TESSERA_REQUIRE_SHARED_FILE(path, "fixtures/hf/phi3_fused/model.safetensors");
    const Result<SafetensorsFile> f = SafetensorsFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->tensors().size(), 15u);
    EXPECT_EQ(f->find("model.layers.0.self_attn.qkv_proj.weight")->shape, (std::vector<int64_t>{192, 64}));
    EXPECT_EQ(f->find("model.layers.0.mlp.gate_up_proj.weight")->shape, (std::vector<int64_t>{352, 64}));
  }
  {
    TESSERA_REQUIRE_SHARED_FILE(path, "fixtures/hf/qwen2_bias/model.safetensors");
    const Result<SafetensorsFile> f = SafetensorsFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->find("model.layers.0.self_attn.q_proj.bias")->shape, (std::vector<int64_t>{64}));
    EXPECT_EQ(f->find("model.layers.0.self_attn.k_proj.bias")->shape, (std::vector<int64_t>{32}));
  }
  {
    TESSERA_REQUIRE_SHARED_FILE(path, "fixtures/hf/qwen3_qknorm/model.safetensors");
    const Result<SafetensorsFile> f = SafetensorsFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->find("model.layers.0.self_attn.q_norm.weight")->shape, (std::vector<int64_t>{16}));
    EXPECT_EQ(f->find("model.layers.0.self_attn.q_proj.weight")->shape, (std::vector<int64_t>{128, 64}));
  }
}

TEST(Safetensors, Bf16FixtureIsF32FixtureRounded) {
  TESSERA_REQUIRE_SHARED_FILE(f32_path, "fixtures/hf/llama_gqa/model.safetensors");
  TESSERA_REQUIRE_SHARED_FILE(bf16_path, "fixtures/hf/llama_gqa_bf16/model.safetensors");
  const Result<SafetensorsFile> f32 = SafetensorsFile::open(f32_path);
  const Result<SafetensorsFile> b16 = SafetensorsFile::open(bf16_path);
  ASSERT_TRUE(f32.ok()) << f32.status().to_string();
  ASSERT_TRUE(b16.ok()) << b16.status().to_string();
  ASSERT_EQ(b16->tensors().size(), f32->tensors().size());
  for (const SafetensorsTensor& b : b16->tensors()) {
    SCOPED_TRACE(b.name);
    const SafetensorsTensor* a = f32->find(b.name);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(b.dtype, DType::kBF16);
    EXPECT_EQ(b.shape, a->shape);
    EXPECT_EQ(b.n_bytes * 2, a->n_bytes);
    const std::vector<float> want = as_f32(*a);
    const std::vector<uint16_t> got = as_u16(b);
    size_t mismatches = 0;
    for (size_t k = 0; k < want.size(); ++k) mismatches += got[k] != fp32_to_bf16(want[k]);
    EXPECT_EQ(mismatches, 0u);
  }
  EXPECT_EQ(as_u16(*b16->find("model.embed_tokens.weight"))[0], 15671);  // 0.04458 in bf16
}

// ---------------------------------------------------------------- synthesized

TEST(Safetensors, SmallFileRoundTrip) {
  std::unique_ptr<uint8_t[]> keep;
  const std::vector<uint8_t> bytes = small_file();
  const Result<SafetensorsFile> f = parse_all(bytes, keep);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(f->tensors()[0].name, "a");  // header order
  EXPECT_EQ(f->metadata().at("k"), "v");
  const SafetensorsTensor* a = f->find("a");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->n_elements, 6);
  EXPECT_EQ(a->n_bytes, 24u);
  EXPECT_EQ(a->data, keep.get() + f->data_offset());
  EXPECT_EQ(a->data[0], 1);
  const SafetensorsTensor* b = f->find("b.weight");
  EXPECT_EQ(b->dtype, DType::kF16);
  EXPECT_EQ(b->data[0], 100);
  const SafetensorsTensor* c = f->find("c");
  EXPECT_EQ(c->dtype, DType::kBF16);
  EXPECT_TRUE(c->shape.empty());
  EXPECT_EQ(c->n_elements, 1);
  EXPECT_EQ(c->data[1], 201);
  const SafetensorsTensor* e = f->find("empty");
  EXPECT_EQ(e->n_elements, 0);
  EXPECT_EQ(e->n_bytes, 0u);
}

TEST(Safetensors, LenientButValidVariants) {
  std::unique_ptr<uint8_t[]> keep;
  // No tensors, no metadata; metadata null; unknown fields skipped; gaps and
  // trailing bytes; unicode names; zero-size tensors sharing an offset.
  for (
      const std::string& h :
      {std::string("{}"), std::string(R"({"__metadata__":null})"),
       std::string(R"({"t":{"dtype":"F32","x":{"y":[1,{"z":null}]},"shape":[1],"data_offsets":[4,8],"w":3}})"),
       std::string(R"({"t\u00e9\u4e2d":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})"),
       std::string(
           R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})")}) {
    const Result<SafetensorsFile> f = parse_all(make_file(h + "  \n", 16), keep);
    EXPECT_TRUE(f.ok()) << h << ": " << f.status().to_string();
  }
  const Result<SafetensorsFile> u =
      parse_all(make_file(R"({"t\u00e9":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4), keep);
  ASSERT_TRUE(u.ok());
  EXPECT_NE(u->find("t\xc3\xa9"), nullptr);
}

TEST(Safetensors, ShortFileAndHeaderSize) {
  std::unique_ptr<uint8_t[]> keep;
  for (size_t n = 0; n < 8; ++n) {
    const std::vector<uint8_t> b(n, 0);
    EXPECT_TRUE(fails_with(parse_copy(b, n, keep).status(), StatusCode::kDataLoss,
                           {"test.safetensors: offset 0", "shorter than the 8-byte header size"}));
  }
  std::vector<uint8_t> b = make_file("{}", 0);
  b[0] = 3;  // header size 3 > 2 bytes left
  EXPECT_TRUE(fails_with(parse_all(b, keep).status(), StatusCode::kDataLoss, {"header size 3 exceeds the 2 bytes"}));
  for (const uint64_t n : {uint64_t{100'000'001}, uint64_t{1} << 40, ~uint64_t{0}}) {
    std::vector<uint8_t> big(8 + 64, ' ');
    for (int k = 0; k < 8; ++k) big[static_cast<size_t>(k)] = static_cast<uint8_t>(n >> (8 * k));
    EXPECT_TRUE(fails_with(parse_all(big, keep).status(), StatusCode::kDataLoss, {"exceeds the limit of 100000000"}));
  }
  EXPECT_TRUE(header_fails("", 0, StatusCode::kDataLoss, {"not valid JSON"}));
}

TEST(Safetensors, HeaderNotJsonObject) {
  EXPECT_TRUE(header_fails("{", 0, StatusCode::kDataLoss, {"offset", "not valid JSON"}));
  EXPECT_TRUE(header_fails("{\"a\":}", 0, StatusCode::kDataLoss, {"not valid JSON"}));
  EXPECT_TRUE(header_fails("{} {}", 0, StatusCode::kDataLoss, {"not valid JSON"}));
  EXPECT_TRUE(header_fails(std::string("{\"a\0\":1}", 8), 0, StatusCode::kDataLoss, {"not valid JSON"}));
  EXPECT_TRUE(header_fails("{\"\xff\":{}}", 0, StatusCode::kDataLoss, {"not valid JSON"}));  // invalid UTF-8
  EXPECT_TRUE(header_fails("[]", 0, StatusCode::kDataLoss, {"not a JSON object (got an array)"}));
  EXPECT_TRUE(header_fails("42", 0, StatusCode::kDataLoss, {"not a JSON object (got an integer)"}));
  EXPECT_TRUE(header_fails("\"x\"", 0, StatusCode::kDataLoss, {"not a JSON object"}));
  EXPECT_TRUE(header_fails(std::string(10000, '['), 0, StatusCode::kDataLoss, {"not a JSON object"}));
  EXPECT_TRUE(
      header_fails("{\"a\":" + std::string(100000, '['), 0, StatusCode::kDataLoss, {"'a'", "must be an object"}));
}

TEST(Safetensors, EntryStructure) {
  const StatusCode kLoss = StatusCode::kDataLoss;
  EXPECT_TRUE(header_fails(R"({"t":[1]})", 0, kLoss, {"tensor 't': entry must be an object, got an array"}));
  EXPECT_TRUE(header_fails(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4, kLoss, {"'t'", "missing \"dtype\""}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", 4, kLoss, {"missing \"shape\""}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1]}})", 4, kLoss, {"missing \"data_offsets\""}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":1,"shape":[1],"data_offsets":[0,4]}})", 4, kLoss,
                           {"\"dtype\" must be a string, got an integer"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":{},"data_offsets":[0,4]}})", 4, kLoss,
                           {"\"shape\" must be an array, got an object"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":"0,4"}})", 4, kLoss,
                           {"\"data_offsets\" must be an array, got a string"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4, kLoss,
                           {"shape must be an array of integers, has a non-integer number"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4, kLoss,
                           {"shape must be an array of integers, has an array"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,null]}})", 4, kLoss,
                           {"data_offsets must be two integers, has null"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, kLoss,
                           {"data_offsets must be [begin, end], got 1 integers"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8, kLoss,
                           {"has more than 2 integers"}));
  EXPECT_TRUE(
      header_fails(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[-1,4]}})", 4, kLoss, {"negative data offset"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]}})", 4, kLoss,
                           {"has a non-integer number"}));  // past uint64: parsed as a float
  EXPECT_TRUE(header_fails(R"({"__metadata__":[]})", 0, kLoss, {"__metadata__ must be an object, got an array"}));
  EXPECT_TRUE(header_fails(R"({"__metadata__":{"a":1}})", 0, kLoss,
                           {"__metadata__ 'a': value must be a string, got an integer"}));
  EXPECT_TRUE(header_fails(R"({"__metadata__":{"a":{"b":"c"}}})", 0, kLoss, {"value must be a string, got an object"}));
}

TEST(Safetensors, Duplicates) {
  const StatusCode kLoss = StatusCode::kDataLoss;
  const std::string t = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_TRUE(header_fails("{\"t\":" + t + ",\"t\":" + t + "}", 4, kLoss, {"duplicate tensor name 't'"}));
  EXPECT_TRUE(header_fails(R"({"__metadata__":{},"__metadata__":{}})", 0, kLoss, {"duplicate \"__metadata__\""}));
  EXPECT_TRUE(header_fails(R"({"__metadata__":{"a":"1","a":"2"}})", 0, kLoss, {"__metadata__: duplicate key 'a'"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4, kLoss,
                           {"tensor 't': duplicate key 'dtype'"}));
}

TEST(Safetensors, ShapeAndDtype) {
  const StatusCode kLoss = StatusCode::kDataLoss;
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[-2,2],"data_offsets":[0,4]}})", 4, kLoss,
                           {"'t'", "negative dimension"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]}})", 4, kLoss,
                           {"dimension 9223372036854775808 too large"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4, kLoss,
                           {"element count overflows"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]}})", 4, kLoss,
                           {"byte count overflows"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})",
                           4, kLoss, {"more than 16 dimensions"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4, kLoss,
                           {"tensor 't': unknown dtype 'f32'"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"","shape":[1],"data_offsets":[0,4]}})", 4, kLoss, {"unknown dtype ''"}));
  for (const auto& [dtype, bytes] : std::vector<std::pair<std::string, int>>{
           {"I64", 8}, {"F8_E4M3", 1}, {"BOOL", 1}, {"U8", 1}, {"I32", 4}, {"F64", 8}, {"C64", 8}}) {
    EXPECT_TRUE(header_fails(
        R"({"pos":{"dtype":")" + dtype + R"(","shape":[2],"data_offsets":[0,)" + std::to_string(2 * bytes) + "]}}", 16,
        StatusCode::kUnimplemented, {"tensor 'pos'", "dtype " + dtype, "not supported"}));
  }
  // Sub-byte dtypes: sizes in bits.
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", 2, StatusCode::kUnimplemented,
                           {"dtype F4"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2, kLoss,
                           {"not a whole number of bytes"}));
  // A structural error wins over an unsupported dtype.
  EXPECT_TRUE(header_fails(
      R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      8, kLoss, {"overlap"}));
}

TEST(Safetensors, Offsets) {
  const StatusCode kLoss = StatusCode::kDataLoss;
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8, kLoss,
                           {"tensor 't': data_offsets [8, 4]: begin > end"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8, kLoss,
                           {"data_offsets [4, 12]: end is past the data buffer (8 bytes)"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", 8, kLoss,
                           {"end is past the data buffer"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8, kLoss,
                           {"data_offsets [0, 4] hold 4 bytes, but 2 elements of F32 need 8"}));
  EXPECT_TRUE(header_fails(R"({"t":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,4]}})", 8, kLoss,
                           {"hold 4 bytes, but 4 elements of BF16 need 8"}));
  EXPECT_TRUE(header_fails(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      8, kLoss, {"tensors 'a' and 'b' overlap"}));
  EXPECT_TRUE(header_fails(
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})",
      12, kLoss, {"'a' and 'b' overlap"}));
  EXPECT_TRUE(header_fails(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      4, kLoss, {"overlap"}));
  // Nested inside a bigger one, found via the furthest end so far.
  EXPECT_TRUE(header_fails(
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"c":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
      16, kLoss, {"overlap"}));
}

TEST(Safetensors, OpenErrors) {
  EXPECT_TRUE(fails_with(SafetensorsFile::open("/nonexistent/x.safetensors").status(), StatusCode::kNotFound,
                         {"/nonexistent/x.safetensors"}));
  EXPECT_FALSE(SafetensorsFile::open("/tmp").ok());
}

// ---------------------------------------------------------------- robustness

TEST(SafetensorsRobustness, TruncatedSmallFileAtEveryOffset) {
  const std::vector<uint8_t> full = small_file();
  std::unique_ptr<uint8_t[]> keep;
  for (size_t n = 0; n < full.size(); ++n) {
    const Result<SafetensorsFile> r = parse_copy(full, n, keep);
    ASSERT_FALSE(r.ok()) << "prefix " << n << " of " << full.size() << " parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().to_string();
    EXPECT_EQ(r.status().message().rfind("test.safetensors: ", 0), 0u) << r.status().message();
  }
  EXPECT_TRUE(parse_copy(full, full.size(), keep).ok());
}

TEST(SafetensorsRobustness, TruncatedFixture) {
  TESSERA_REQUIRE_SHARED_FILE(path, "fixtures/hf/qwen2_bias/model.safetensors");
  const std::vector<uint8_t> full = read_bytes(path);
  std::unique_ptr<uint8_t[]> keep;
  const Result<SafetensorsFile> whole = parse_all(full, keep);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const size_t header_end = static_cast<size_t>(whole->data_offset());
  std::vector<size_t> cuts;
  for (size_t n = 0; n <= header_end + 16; ++n) cuts.push_back(n);                // every offset in the header
  for (size_t n = header_end + 16; n < full.size(); n += 997) cuts.push_back(n);  // a spread through the data
  for (size_t n = full.size() - 8; n < full.size(); ++n) cuts.push_back(n);       // the last bytes
  for (const size_t n : cuts) {
    const Result<SafetensorsFile> r = parse_copy(full, n, keep);
    ASSERT_FALSE(r.ok()) << "prefix " << n << " parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().to_string();
  }
}

TEST(SafetensorsRobustness, RandomMutations) {
  std::mt19937_64 rng(20240611);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> inputs = {{"small", small_file()}};
  if (::tessera::testing::file_exists(
          ::tessera::testing::shared_path("fixtures/hf/llama_gqa_bf16/model.safetensors"))) {
    std::vector<uint8_t> b =
        read_bytes(::tessera::testing::shared_path("fixtures/hf/llama_gqa_bf16/model.safetensors"));
    inputs.emplace_back("llama_gqa_bf16", std::move(b));
  }
  const std::string interesting = "{}[]\":,-0123456789eE.\\ ntfu";
  for (const auto& [label, base] : inputs) {
    std::unique_ptr<uint8_t[]> keep;
    const Result<SafetensorsFile> whole = parse_all(base, keep);
    ASSERT_TRUE(whole.ok());
    const size_t header_end = static_cast<size_t>(whole->data_offset());
    const int iterations = label == "small" ? 6000 : 1500;
    int parsed = 0;
    for (int it = 0; it < iterations; ++it) {
      std::vector<uint8_t> m = base;
      const int n_mut = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < n_mut; ++k) {
        // Mostly the header (where the structure is); sometimes the size field.
        const size_t pos = rng() % 10 == 0 ? rng() % 8 : rng() % header_end;
        if (rng() % 2 == 0) {
          m[pos] = static_cast<uint8_t>(interesting[rng() % interesting.size()]);
        } else {
          m[pos] = static_cast<uint8_t>(rng());
        }
      }
      size_t n = m.size();
      if (rng() % 8 == 0) n = rng() % m.size();
      const Result<SafetensorsFile> r = parse_copy(m, n, keep);
      parsed += r.ok();
      expect_safe(r, keep.get(), n, label + " iteration " + std::to_string(it));
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_LT(parsed, iterations) << label;
  }
}

// ---------------------------------------------------------------- checkpoints

class SafetensorsCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_st_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream out(dir_ / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  void write(const std::string& name, const std::string& text) {
    write(name, std::vector<uint8_t>(text.begin(), text.end()));
  }

  void write_two_shards() {
    write("model-00001-of-00002.safetensors",
          write_file({{"b", "F32", {2}, iota_bytes(8, 10)}, {"a", "F16", {3}, iota_bytes(6, 20)}}));
    write("model-00002-of-00002.safetensors", write_file({{"c", "BF16", {2, 2}, iota_bytes(8, 30)}}));
  }
  static std::string index(const std::string& weight_map) {
    return R"({"metadata":{"total_size":22},"weight_map":)" + weight_map + "}";
  }
  static constexpr const char* kGoodMap =
      R"({"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"})";

  std::string dir() const { return dir_.string(); }
  fs::path dir_;
};

TEST_F(SafetensorsCheckpointTest, TwoShards) {
  write_two_shards();
  write("model.safetensors.index.json", index(kGoodMap));
  Result<SafetensorsCheckpoint> ck = SafetensorsCheckpoint::open_dir(dir());
  ASSERT_TRUE(ck.ok()) << ck.status().to_string();
  EXPECT_EQ(ck->files().size(), 2u);
  const std::vector<const SafetensorsTensor*> ts = ck->tensors();
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[0]->name, "a");
  EXPECT_EQ(ts[1]->name, "b");
  EXPECT_EQ(ts[2]->name, "c");
  EXPECT_EQ(ck->find("a")->dtype, DType::kF16);
  EXPECT_EQ(ck->find("a")->data[0], 20);
  EXPECT_EQ(ck->find("b")->data[7], 17);
  EXPECT_EQ(ck->find("c")->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ck->find("c")->data[0], 30);
  EXPECT_EQ(ck->find("d"), nullptr);
  // Moving the checkpoint keeps tensor pointers valid.
  const SafetensorsTensor* c = ck->find("c");
  SafetensorsCheckpoint moved = std::move(ck).value();
  EXPECT_EQ(moved.find("c"), c);
  EXPECT_EQ(moved.find("c")->data[3], 33);
}

TEST_F(SafetensorsCheckpointTest, IndexPreferredAndSingleFile) {
  write("model.safetensors", write_file({{"only", "F32", {1}, iota_bytes(4, 1)}}));
  Result<SafetensorsCheckpoint> ck = SafetensorsCheckpoint::open_dir(dir());
  ASSERT_TRUE(ck.ok()) << ck.status().to_string();
  ASSERT_EQ(ck->tensors().size(), 1u);
  EXPECT_NE(ck->find("only"), nullptr);
  write_two_shards();
  write("model.safetensors.index.json", index(kGoodMap));
  ck = SafetensorsCheckpoint::open_dir(dir());
  ASSERT_TRUE(ck.ok()) << ck.status().to_string();
  EXPECT_EQ(ck->find("only"), nullptr);
  EXPECT_EQ(ck->tensors().size(), 3u);
}

TEST_F(SafetensorsCheckpointTest, Errors) {
  EXPECT_TRUE(fails_with(SafetensorsCheckpoint::open_dir(dir()).status(), StatusCode::kNotFound,
                         {dir(), "neither model.safetensors nor model.safetensors.index.json"}));
  write_two_shards();
  const auto check = [&](const std::string& index_json, StatusCode code, std::initializer_list<std::string> needles) {
    write("model.safetensors.index.json", index_json);
    return fails_with(SafetensorsCheckpoint::open_dir(dir()).status(), code, needles);
  };
  EXPECT_TRUE(check(index(R"({"a":"model-00001-of-00002.safetensors","c":"missing.safetensors"})"),
                    StatusCode::kNotFound,
                    {"model.safetensors.index.json", "shard 'missing.safetensors'", "cannot open"}));
  EXPECT_TRUE(check(index(R"({"a":"model-00001-of-00002.safetensors","x":"model-00002-of-00002.safetensors"})"),
                    StatusCode::kDataLoss,
                    {"tensor 'x' is listed for shard 'model-00002-of-00002.safetensors' but absent from it"}));
  EXPECT_TRUE(check(index(R"({"a":"model-00002-of-00002.safetensors","b":"model-00001-of-00002.safetensors"})"),
                    StatusCode::kDataLoss,
                    {"tensor 'a' is listed for shard 'model-00002-of-00002.safetensors' but is in "
                     "'model-00001-of-00002.safetensors'"}));
  EXPECT_TRUE(check(index(R"({"a":"model-00001-of-00002.safetensors","a":"model-00002-of-00002.safetensors"})"),
                    StatusCode::kDataLoss, {"duplicate key 'a'"}));
  EXPECT_TRUE(check("{\"weight_map\":", StatusCode::kDataLoss, {"model.safetensors.index.json", "not valid JSON"}));
  EXPECT_TRUE(check("[]", StatusCode::kDataLoss, {"not a JSON object"}));
  EXPECT_TRUE(check(R"({"metadata":{}})", StatusCode::kDataLoss, {"missing object \"weight_map\""}));
  EXPECT_TRUE(check(index("{}"), StatusCode::kDataLoss, {"\"weight_map\" is empty"}));
  EXPECT_TRUE(check(index(R"({"a":3})"), StatusCode::kDataLoss, {"weight_map 'a': file must be a string"}));
  EXPECT_TRUE(check(index(R"({"a":"../model-00001-of-00002.safetensors"})"), StatusCode::kDataLoss,
                    {"must be a relative path inside the directory"}));
  EXPECT_TRUE(check(index(R"({"a":"/etc/passwd"})"), StatusCode::kDataLoss, {"must be a relative path"}));

  // A corrupt shard: its own error, prefixed with the index and shard.
  write("bad.safetensors", std::string("xx"));
  EXPECT_TRUE(check(index(R"({"a":"bad.safetensors"})"), StatusCode::kDataLoss,
                    {"shard 'bad.safetensors'", "bad.safetensors: offset 0: truncated"}));

  // The same tensor in two shards.
  write("model-00002-of-00002.safetensors",
        write_file({{"c", "BF16", {2, 2}, iota_bytes(8, 30)}, {"b", "F32", {2}, iota_bytes(8, 10)}}));
  EXPECT_TRUE(check(index(kGoodMap), StatusCode::kDataLoss,
                    {"tensor 'b' is in two shards, 'model-00001-of-00002.safetensors' and "
                     "'model-00002-of-00002.safetensors'"}));
}

}  // namespace
}  // namespace tessera
