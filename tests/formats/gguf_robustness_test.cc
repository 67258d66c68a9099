// Hostile and damaged GGUF input: every case must come back as a Status that
// names the file and the offset or tensor, never a crash, a hang or a huge
// allocation. Run under ASan+UBSan (TESSERA_SANITIZE=ON) to make that check
// meaningful; fuzz/gguf_fuzz.cc explores further.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>

#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "gguf_test_util.h"
#include "test_support.h"

namespace tessera {
namespace {

using testing::parse_bytes;
using testing::parse_copy;
using testing::RawGguf;

constexpr uint64_t kHuge = 0xffffffffffffffffull;

::testing::AssertionResult fails_with(const Result<GgufFile>& r, StatusCode code,
                                      std::initializer_list<std::string> needles) {
  if (r.ok()) return ::testing::AssertionFailure() << "parsed OK";
  const Status s = r.status();
  if (s.code() != code) return ::testing::AssertionFailure() << "wrong code: " << s.to_string();
  for (const std::string& n : needles) {
    if (s.message().find(n) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << n << "': " << s.message();
    }
  }
  return ::testing::AssertionSuccess();
}

// A small but complete file: metadata of several types, two tensors.
std::vector<uint8_t> small_file() {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_uint32("llama.block_count", 2);
  w.add_float32("eps", 1e-5f);
  w.add_bool("flag", true);
  w.add_string_array("tokens", {"a", "bc", ""});
  GgufValue nested;
  nested.type = GgufType::kArray;
  nested.array_type = GgufType::kArray;
  GgufValue inner;
  inner.type = GgufType::kArray;
  inner.array_type = GgufType::kInt16;
  inner.array.resize(2);
  for (GgufValue& e : inner.array) e.type = GgufType::kInt16;
  nested.array = {inner, inner};
  w.add_value("nested", nested);
  w.add_tensor("a", {8, 2}, DType::kF16, std::vector<uint8_t>(32, 7));
  w.add_tensor("b", {32}, DType::kQ8_0, std::vector<uint8_t>(34, 9));  // 34 bytes + 30 of padding
  return w.to_bytes().value();
}

// End of the last tensor's bytes: truncating anywhere before it must fail.
size_t end_of_data(const GgufFile& f) {
  uint64_t end = 0;
  for (const GgufTensorInfo& t : f.tensors()) end = std::max(end, f.data_offset() + t.offset + t.n_bytes);
  return static_cast<size_t>(end);
}

// Either parses with every tensor inside the buffer, or fails with a message
// that names the file.
void expect_safe(const Result<GgufFile>& r, const uint8_t* base, size_t size, const std::string& name,
                 const std::string& trace) {
  if (!r.ok()) {
    EXPECT_EQ(r.status().message().rfind(name, 0), 0u) << trace << ": " << r.status().message();
    return;
  }
  for (const GgufTensorInfo& t : r->tensors()) {
    ASSERT_GE(t.data, base) << trace;
    ASSERT_LE(t.n_bytes, size) << trace;
    ASSERT_LE(t.data + t.n_bytes, base + size) << trace;
    if (t.n_bytes > 0) {
      volatile uint8_t first = t.data[0];
      volatile uint8_t last = t.data[t.n_bytes - 1];
      (void)first;
      (void)last;
    }
  }
}

TEST(GgufRobustness, BadMagic) {
  RawGguf raw;
  raw.u32(0x46554746).u32(3).u64(0).u64(0);  // "FGUF"
  EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "bad.gguf"), StatusCode::kDataLoss,
                         {"bad.gguf: offset 0", "not a GGUF file"}));
  EXPECT_TRUE(fails_with(parse_bytes({}, "empty.gguf"), StatusCode::kDataLoss, {"empty.gguf: offset 0", "truncated"}));
}

TEST(GgufRobustness, UnsupportedVersions) {
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
    RawGguf raw;
    raw.header(0, 0, v);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "v.gguf"), StatusCode::kUnimplemented,
                           {"v.gguf", "version " + std::to_string(v)}));
  }
  RawGguf big;
  big.header(0, 0, 0x03000000u);
  EXPECT_TRUE(fails_with(parse_bytes(big.bytes()), StatusCode::kUnimplemented, {"big-endian"}));
}

TEST(GgufRobustness, TruncatedSmallFileAtEveryOffset) {
  const std::vector<uint8_t> full = small_file();
  std::unique_ptr<uint8_t[]> keep;
  const Result<GgufFile> whole = parse_copy(full, full.size(), keep);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const size_t end = end_of_data(*whole);
  ASSERT_GT(end, 200u);
  for (size_t n = 0; n < end; ++n) {
    const Result<GgufFile> r = parse_copy(full, n, keep);
    ASSERT_FALSE(r.ok()) << "prefix " << n << " of " << full.size() << " parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().to_string();
    EXPECT_EQ(r.status().message().rfind("test.gguf: ", 0), 0u) << r.status().message();
  }
  // Trailing padding after the last tensor is optional.
  for (size_t n = end; n <= full.size(); ++n) EXPECT_TRUE(parse_copy(full, n, keep).ok()) << n;
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GgufRobustness, TruncatedStories260K) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  const std::vector<uint8_t> full = read_all(path);
  std::unique_ptr<uint8_t[]> keep;
  const Result<GgufFile> whole = parse_copy(full, full.size(), keep, "stories");
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  ASSERT_EQ(end_of_data(*whole), full.size());
  // Every offset of the first 400 header bytes (the fixed header, the first
  // keys and the start of the token array), then strided through the rest of
  // the header and the tensor data: ~750 cuts.
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 400; ++n) cuts.push_back(n);
  for (size_t n = 400; n < whole->data_offset(); n += 61) cuts.push_back(n);
  for (size_t n = whole->data_offset(); n < full.size(); n += full.size() / 97) cuts.push_back(n);
  cuts.push_back(full.size() - 1);
  ASSERT_GE(cuts.size(), 500u);
  for (const size_t n : cuts) {
    const Result<GgufFile> r = parse_copy(full, n, keep, "stories");
    ASSERT_FALSE(r.ok()) << "prefix " << n << " parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().to_string();
    EXPECT_EQ(r.status().message().rfind("stories: ", 0), 0u) << r.status().message();
  }
  // A cut inside the tensor data names the tensor whose bytes are missing.
  const Result<GgufFile> r = parse_copy(full, full.size() - 1, keep, "stories");
  EXPECT_TRUE(fails_with(r, StatusCode::kDataLoss,
                         {"tensor '", "extends past end of file (size " + std::to_string(full.size() - 1) + ")"}));
}

// Flips bytes at random offsets (deterministic seed) and checks that each
// mutant either parses with all tensors inside the buffer or fails cleanly.
void mutate_and_parse(std::vector<uint8_t>& buf, size_t region, int iterations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint8_t specials[] = {0x00, 0xff, 0x80, 0x7f, 0x01, 0x20, 0x40, 0x10};
  for (int it = 0; it < iterations; ++it) {
    const int n_changes = 1 + static_cast<int>(rng() % 4);
    std::vector<std::pair<size_t, uint8_t>> saved;
    for (int c = 0; c < n_changes; ++c) {
      const size_t at = static_cast<size_t>(rng() % region);
      saved.emplace_back(at, buf[at]);
      const uint64_t kind = rng() % 3;
      buf[at] = kind == 0 ? static_cast<uint8_t>(rng()) : kind == 1 ? specials[rng() % 8]
                                                                     : static_cast<uint8_t>(buf[at] ^ (1u << (rng() % 8)));
    }
    const Result<GgufFile> r = GgufFile::parse(buf.data(), buf.size(), "mutant");
    expect_safe(r, buf.data(), buf.size(), "mutant", "iteration " + std::to_string(it));
    for (auto s = saved.rbegin(); s != saved.rend(); ++s) buf[s->first] = s->second;
  }
}

TEST(GgufRobustness, MutatedSmallFile) {
  std::vector<uint8_t> buf = small_file();
  // Every offset set to a few values, then random multi-byte mutations.
  for (size_t at = 0; at < buf.size(); ++at) {
    const uint8_t orig = buf[at];
    for (const uint8_t v : {uint8_t{0x00}, uint8_t{0xff}, static_cast<uint8_t>(orig + 1), uint8_t{0x80}}) {
      buf[at] = v;
      const Result<GgufFile> r = GgufFile::parse(buf.data(), buf.size(), "mutant");
      expect_safe(r, buf.data(), buf.size(), "mutant", "offset " + std::to_string(at));
    }
    buf[at] = orig;
  }
  mutate_and_parse(buf, buf.size(), 3000, 1234);
}

TEST(GgufRobustness, MutatedStories260K) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  std::vector<uint8_t> buf = read_all(path);
  const Result<GgufFile> whole = GgufFile::parse(buf.data(), buf.size(), "stories");
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  // Mutations of the header (metadata and tensor infos) are the interesting
  // ones; tensor bytes are opaque to the parser.
  mutate_and_parse(buf, static_cast<size_t>(whole->data_offset()), 600, 42);
}

TEST(GgufRobustness, HugeCountsAndLengths) {
  {
    RawGguf raw;
    raw.header(0, kHuge);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "h.gguf"), StatusCode::kDataLoss,
                           {"h.gguf: offset 16", "metadata count 18446744073709551615 exceeds file size"}));
  }
  {
    RawGguf raw;
    raw.header(1ull << 40, 0);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "h.gguf"), StatusCode::kDataLoss,
                           {"h.gguf: offset 8", "tensor count"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).u64(99999999).zeros(32);  // key length
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "h.gguf"), StatusCode::kDataLoss,
                           {"h.gguf: offset 24", "length 99999999 exceeds file size"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(8).u64(kHuge).zeros(16);  // string value length
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "h.gguf"), StatusCode::kDataLoss,
                           {"h.gguf: offset 37", "string length 18446744073709551615 exceeds file size"}));
  }
  for (uint32_t elem : {0u, 4u, 8u, 9u, 12u}) {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(9).u32(elem).u64(1ull << 62).zeros(64);  // array length
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "h.gguf"), StatusCode::kDataLoss,
                           {"h.gguf: offset 41", "array length 4611686018427387904"}));
  }
  {
    // An array of 1M empty nested arrays, claimed with 16 bytes of file left.
    RawGguf raw;
    raw.header(0, 1).str("k").u32(9).u32(9).u64(1000000).u32(0).u64(0);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"array length 1000000"}));
  }
  {
    RawGguf raw;
    raw.header(1, 0).u64(kHuge - 3).zeros(40);  // tensor name length
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"tensor name length"}));
  }
}

TEST(GgufRobustness, NestingDepthIsBounded) {
  for (int depth : {GgufFile::kMaxArrayDepth, GgufFile::kMaxArrayDepth + 1, 10000}) {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(9);
    for (int d = 1; d < depth; ++d) raw.u32(9).u64(1);
    raw.u32(0).u64(0);
    const Result<GgufFile> r = parse_bytes(raw.bytes());
    if (depth <= GgufFile::kMaxArrayDepth) {
      EXPECT_TRUE(r.ok()) << r.status().to_string();
    } else {
      EXPECT_TRUE(fails_with(r, StatusCode::kDataLoss, {"nested deeper than"})) << depth;
    }
  }
}

TEST(GgufRobustness, BadMetadata) {
  {
    RawGguf raw;
    raw.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "d.gguf"), StatusCode::kDataLoss,
                           {"d.gguf: offset 41", "duplicate metadata key 'k'"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(13).u32(0);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"offset 33", "unknown value type 13"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(9).u32(77).u64(0);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"unknown array element type 77"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(7).u8(2);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"bool value 2"}));
  }
}

TEST(GgufRobustness, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u, 0x80000001u}) {
    RawGguf raw;
    raw.header(0, 1).kv_u32("general.alignment", a);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "a.gguf"), StatusCode::kDataLoss,
                           {"a.gguf", "general.alignment = " + std::to_string(a), "power of two"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).str("general.alignment").u32(10).u64(1ull << 40);  // uint64, too large
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"general.alignment"}));
  }
  {
    RawGguf raw;
    raw.header(0, 1).str("general.alignment").u32(8).str("32");
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes()), StatusCode::kDataLoss, {"general.alignment"}));
  }
  {
    // A valid non-default alignment moves the data section.
    RawGguf raw;
    raw.header(1, 1).kv_u32("general.alignment", 256).tensor("t", {4}, 0, 0).pad(256).zeros(16);
    const Result<GgufFile> r = parse_bytes(raw.bytes());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->alignment(), 256u);
    EXPECT_EQ(r->data_offset(), 256u);
  }
  {
    // Any integer type is read (here int8 8); GgufWriter writes it back as the
    // spec's uint32 (the input gguf_fuzz found when its round-trip check
    // still expected the type unchanged).
    RawGguf raw;
    raw.header(0, 1).str("general.alignment").u32(1).u8(8);
    const Result<GgufFile> r = parse_bytes(raw.bytes());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->alignment(), 8u);
    GgufWriter w;
    for (const GgufKeyValue& kv : r->metadata()) w.add_value(kv.key, kv.value);
    const auto bytes = w.to_bytes(static_cast<uint32_t>(r->alignment()));
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    const Result<GgufFile> again = GgufFile::parse(bytes->data(), bytes->size(), "again");
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    ASSERT_NE(again->find("general.alignment"), nullptr);
    EXPECT_EQ(again->find("general.alignment")->type, GgufType::kUint32);
    EXPECT_EQ(again->find("general.alignment")->as_int(), 8);
    EXPECT_EQ(again->alignment(), 8u);
  }
}

TEST(GgufRobustness, BadTensorInfos) {
  const auto one_tensor = [](const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset, size_t data) {
    RawGguf raw;
    raw.header(1, 0).tensor("blk.0.attn_q.weight", dims, type, offset).pad().zeros(data);
    return raw.bytes();
  };
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({1, 1, 1, 1, 1}, 0, 0, 64), "t.gguf"), StatusCode::kDataLoss,
                         {"t.gguf: offset 24: tensor 'blk.0.attn_q.weight'", "5 dimensions"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({4, kHuge}, 0, 0, 64)), StatusCode::kDataLoss,
                         {"tensor 'blk.0.attn_q.weight'", "negative"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({1ull << 32, 1ull << 32}, 0, 0, 64)), StatusCode::kDataLoss,
                         {"overflows int64"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({1ull << 62}, 28, 0, 64)), StatusCode::kDataLoss,
                         {"byte size overflows"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({48}, 8, 0, 64)), StatusCode::kDataLoss,
                         {"shape[0] = 48 is not a multiple of the q8_0 block size 32"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({4}, 4, 0, 64)), StatusCode::kUnimplemented,
                         {"tensor 'blk.0.attn_q.weight'", "unsupported ggml type 4"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({4}, 12345, 0, 64)), StatusCode::kUnimplemented,
                         {"unsupported ggml type 12345"}));
  // Misaligned offset.
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({4}, 0, 4, 64), "m.gguf"), StatusCode::kDataLoss,
                         {"m.gguf: offset 24: tensor 'blk.0.attn_q.weight'", "data offset 4 is not a multiple of the alignment 32"}));
  // Past the end of the file: data section at 96, 64 floats = 256 bytes, 64 present.
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({64}, 0, 0, 64), "e.gguf"), StatusCode::kDataLoss,
                         {"e.gguf: offset 24: tensor 'blk.0.attn_q.weight': data [96, 352) extends past end of file (size 160)"}));
  // An offset that overflows when added to the data section start.
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({4}, 0, kHuge - 31, 64)), StatusCode::kDataLoss, {"overflows"}));
  EXPECT_TRUE(fails_with(parse_bytes(one_tensor({4}, 0, 1ull << 40, 64)), StatusCode::kDataLoss,
                         {"extends past end of file"}));
}

TEST(GgufRobustness, DuplicateAndOverlappingTensors) {
  {
    RawGguf raw;
    raw.header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).pad().zeros(64);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "dup.gguf"), StatusCode::kDataLoss,
                           {"dup.gguf: offset 57", "duplicate tensor name 'w'"}));
  }
  {
    RawGguf raw;
    raw.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad().zeros(64);
    EXPECT_TRUE(fails_with(parse_bytes(raw.bytes(), "o.gguf"), StatusCode::kDataLoss,
                           {"o.gguf", "tensor 'b'", "overlaps tensor 'a'"}));
  }
  {
    // Touching but not overlapping, listed out of order, plus an empty tensor.
    RawGguf raw;
    raw.header(3, 0).tensor("b", {8}, 0, 32).tensor("a", {8}, 0, 0).tensor("z", {0}, 0, 32).pad().zeros(64);
    const Result<GgufFile> r = parse_bytes(raw.bytes());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->tensors().size(), 3u);
  }
}

}  // namespace
}  // namespace tessera
