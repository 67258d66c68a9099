#include "formats/gguf_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "formats/gguf_reader.h"
#include "gguf_test_util.h"

namespace tessera {
namespace {

using testing::parse_bytes;

GgufValue scalar(GgufType t) {
  GgufValue v;
  v.type = t;
  return v;
}
GgufValue uval(GgufType t, uint64_t x) {
  GgufValue v = scalar(t);
  v.u = x;
  v.i = static_cast<int64_t>(x);
  return v;
}
GgufValue ival(GgufType t, int64_t x) {
  GgufValue v = scalar(t);
  v.i = x;
  v.u = static_cast<uint64_t>(x);
  return v;
}
GgufValue fval(GgufType t, double x) {
  GgufValue v = scalar(t);
  v.f = x;
  return v;
}
GgufValue sval(const std::string& s) {
  GgufValue v = scalar(GgufType::kString);
  v.str = s;
  return v;
}
GgufValue arr(GgufType elem, std::vector<GgufValue> items) {
  GgufValue v = scalar(GgufType::kArray);
  v.array_type = elem;
  v.array = std::move(items);
  return v;
}

// Field-by-field equality of what the writer reads from and the reader fills.
void expect_same(const GgufValue& a, const GgufValue& b, const std::string& where) {
  ASSERT_EQ(a.type, b.type) << where;
  switch (a.type) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64: EXPECT_EQ(a.u, b.u) << where; break;
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64: EXPECT_EQ(a.i, b.i) << where; break;
    case GgufType::kBool: EXPECT_EQ(a.i != 0, b.i != 0) << where; break;
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      if (std::isnan(a.f)) {
        EXPECT_TRUE(std::isnan(b.f)) << where;
      } else {
        EXPECT_EQ(a.f, b.f) << where;
      }
      break;
    case GgufType::kString: EXPECT_EQ(a.str, b.str) << where; break;
    case GgufType::kArray:
      ASSERT_EQ(a.array_type, b.array_type) << where;
      ASSERT_EQ(a.array.size(), b.array.size()) << where;
      for (size_t k = 0; k < a.array.size(); ++k) expect_same(a.array[k], b.array[k], where + "[" + std::to_string(k) + "]");
      break;
  }
}

std::vector<GgufKeyValue> every_value_type() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<GgufKeyValue> kvs = {
      {"u8", uval(GgufType::kUint8, 255)},
      {"i8", ival(GgufType::kInt8, -128)},
      {"u16", uval(GgufType::kUint16, 65535)},
      {"i16", ival(GgufType::kInt16, -32768)},
      {"u32", uval(GgufType::kUint32, 4294967295u)},
      {"i32", ival(GgufType::kInt32, std::numeric_limits<int32_t>::min())},
      {"f32", fval(GgufType::kFloat32, -1.5)},
      {"f32.inf", fval(GgufType::kFloat32, inf)},
      {"f32.nan", fval(GgufType::kFloat32, std::nan(""))},
      {"bool.t", ival(GgufType::kBool, 1)},
      {"bool.f", ival(GgufType::kBool, 0)},
      {"str", sval("héllo \xe2\x96\x81 world")},
      {"str.empty", sval("")},
      {"str.nul", sval(std::string("a\0b", 3))},
      {"u64", uval(GgufType::kUint64, std::numeric_limits<uint64_t>::max())},
      {"i64", ival(GgufType::kInt64, std::numeric_limits<int64_t>::min())},
      {"f64", fval(GgufType::kFloat64, 0.1)},
      {"f64.neg_inf", fval(GgufType::kFloat64, -inf)},
      {"", sval("empty key is allowed")},
  };
  // Arrays of every element type, an empty one and nested ones.
  std::vector<GgufValue> strings = {sval("a"), sval(""), sval("<0x0A>")};
  kvs.push_back({"arr.u8", arr(GgufType::kUint8, {uval(GgufType::kUint8, 0), uval(GgufType::kUint8, 200)})});
  kvs.push_back({"arr.i8", arr(GgufType::kInt8, {ival(GgufType::kInt8, -1)})});
  kvs.push_back({"arr.u16", arr(GgufType::kUint16, {uval(GgufType::kUint16, 60000)})});
  kvs.push_back({"arr.i16", arr(GgufType::kInt16, {ival(GgufType::kInt16, -300)})});
  kvs.push_back({"arr.u32", arr(GgufType::kUint32, {uval(GgufType::kUint32, 1), uval(GgufType::kUint32, 2)})});
  kvs.push_back({"arr.i32", arr(GgufType::kInt32, {ival(GgufType::kInt32, -7), ival(GgufType::kInt32, 9)})});
  kvs.push_back({"arr.f32", arr(GgufType::kFloat32, {fval(GgufType::kFloat32, 0.25)})});
  kvs.push_back({"arr.bool", arr(GgufType::kBool, {ival(GgufType::kBool, 1), ival(GgufType::kBool, 0)})});
  kvs.push_back({"arr.str", arr(GgufType::kString, strings)});
  kvs.push_back({"arr.u64", arr(GgufType::kUint64, {uval(GgufType::kUint64, 1ull << 63)})});
  kvs.push_back({"arr.i64", arr(GgufType::kInt64, {ival(GgufType::kInt64, -(1ll << 40))})});
  kvs.push_back({"arr.f64", arr(GgufType::kFloat64, {fval(GgufType::kFloat64, 1e300)})});
  kvs.push_back({"arr.empty", arr(GgufType::kFloat32, {})});
  kvs.push_back({"arr.nested", arr(GgufType::kArray, {arr(GgufType::kString, strings), arr(GgufType::kInt32, {})})});
  GgufValue deep = arr(GgufType::kUint8, {uval(GgufType::kUint8, 42)});
  for (int d = 1; d < GgufFile::kMaxArrayDepth; ++d) deep = arr(GgufType::kArray, {deep, deep});
  kvs.push_back({"arr.deepest", deep});
  return kvs;
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  const std::vector<GgufKeyValue> kvs = every_value_type();
  GgufWriter w;
  for (const GgufKeyValue& kv : kvs) w.add_value(kv.key, kv.value);
  const Result<std::vector<uint8_t>> bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  const Result<GgufFile> f = parse_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->find("general.alignment"), nullptr);  // default: not written
  ASSERT_EQ(f->metadata().size(), kvs.size());
  for (size_t k = 0; k < kvs.size(); ++k) {
    EXPECT_EQ(f->metadata()[k].key, kvs[k].key);  // insertion order
    expect_same(kvs[k].value, f->metadata()[k].value, kvs[k].key);
  }
  EXPECT_EQ(f->get_int("u64").status().code(), StatusCode::kInvalidArgument);  // > INT64_MAX
  EXPECT_EQ(f->get_int("i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->get_int("u32").value(), 4294967295);
  EXPECT_EQ(f->get_bool("bool.t").value(), true);
  EXPECT_EQ(f->get_string("str.nul").value(), std::string("a\0b", 3));
  EXPECT_EQ(f->get_string_array("arr.str").value(), (std::vector<std::string>{"a", "", "<0x0A>"}));
  EXPECT_EQ(f->get_int_array("arr.i32").value(), (std::vector<int64_t>{-7, 9}));
  EXPECT_EQ(f->get_float_array("arr.u8").value(), (std::vector<double>{0, 200}));
  EXPECT_TRUE(f->get_float_array("arr.empty").value().empty());
  EXPECT_EQ(f->get_int_array("arr.u64").status().code(), StatusCode::kInvalidArgument);
}

TEST(GgufWriter, TypedAddersAndReplacement) {
  GgufWriter w;
  w.add_uint32("a.u32", 7);
  w.add_int32("a.i32", -7);
  w.add_uint64("a.u64", 1ull << 40);
  w.add_float32("a.f32", 0.125f);
  w.add_bool("a.bool", true);
  w.add_string("a.str", "llama");
  w.add_string_array("a.strs", {"x", "y"});
  w.add_float32_array("a.f32s", {1.5f, -2});
  w.add_int32_array("a.i32s", {3, -4});
  w.add_uint32("a.u32", 8);  // replaces in place
  const Result<std::vector<uint8_t>> bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  const Result<GgufFile> f = parse_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->metadata().size(), 9u);
  EXPECT_EQ(f->metadata()[0].key, "a.u32");
  EXPECT_EQ(f->get_int("a.u32").value(), 8);
  EXPECT_EQ(f->find("a.u32")->type, GgufType::kUint32);
  EXPECT_EQ(f->get_int("a.i32").value(), -7);
  EXPECT_EQ(f->find("a.i32")->type, GgufType::kInt32);
  EXPECT_EQ(f->get_int("a.u64").value(), 1ll << 40);
  EXPECT_EQ(f->get_float("a.f32").value(), 0.125);
  EXPECT_EQ(f->get_bool("a.bool").value(), true);
  EXPECT_EQ(f->get_string("a.str").value(), "llama");
  EXPECT_EQ(f->get_string_array("a.strs").value(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(f->get_float_array("a.f32s").value(), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(f->find("a.f32s")->array_type, GgufType::kFloat32);
  EXPECT_EQ(f->get_int_array("a.i32s").value(), (std::vector<int64_t>{3, -4}));
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

void round_trip_tensors(uint32_t alignment) {
  struct Spec {
    std::string name;
    std::vector<int64_t> shape;
    DType dtype;
  };
  const std::vector<Spec> specs = {
      {"f32.matrix", {3, 5}, DType::kF32},   {"f16.vec", {7}, DType::kF16},
      {"bf16.3d", {2, 3, 4}, DType::kBF16},  {"q8_0", {64, 3}, DType::kQ8_0},
      {"q4_0", {32, 2, 1, 2}, DType::kQ4_0}, {"empty", {0, 4}, DType::kF32},
      {"scalar", {}, DType::kF32},           {"f16.odd", {1}, DType::kF16},
  };
  GgufWriter w;
  w.add_string("general.architecture", "test");
  std::vector<std::vector<uint8_t>> data;
  for (size_t k = 0; k < specs.size(); ++k) {
    int64_t n = 1;
    for (int64_t d : specs[k].shape) n *= d;
    const size_t bytes = static_cast<size_t>(n / dtype_block_elems(specs[k].dtype)) * dtype_block_bytes(specs[k].dtype);
    data.push_back(random_bytes(bytes, k));
    w.add_tensor(specs[k].name, specs[k].shape, specs[k].dtype, data.back());
  }
  const Result<std::vector<uint8_t>> bytes = w.to_bytes(alignment);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(bytes->size() % alignment, 0u);
  const Result<GgufFile> f = parse_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), alignment);
  if (alignment != 32) {
    EXPECT_EQ(f->get_int("general.alignment").value(), alignment);
    EXPECT_EQ(f->find("general.alignment")->type, GgufType::kUint32);
  }
  EXPECT_EQ(f->data_offset() % alignment, 0u);
  ASSERT_EQ(f->tensors().size(), specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    const GgufTensorInfo& t = f->tensors()[k];
    EXPECT_EQ(t.name, specs[k].name);
    EXPECT_EQ(t.shape, specs[k].shape);
    EXPECT_EQ(t.dtype, specs[k].dtype);
    EXPECT_EQ(t.ggml_type, dtype_to_ggml(specs[k].dtype));
    EXPECT_EQ(t.offset % alignment, 0u);
    EXPECT_EQ(static_cast<uint64_t>(t.data - bytes->data()) % alignment, 0u);
    ASSERT_EQ(t.n_bytes, data[k].size()) << t.name;
    EXPECT_TRUE(std::equal(data[k].begin(), data[k].end(), t.data)) << t.name;
  }
}

TEST(GgufWriter, RoundTripsTensorsOfEveryDType) { round_trip_tensors(32); }

TEST(GgufWriter, RoundTripsNonDefaultAlignment) {
  for (uint32_t a : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(a);
    round_trip_tensors(a);
  }
}

TEST(GgufWriter, CopiedAlignmentKeyIsOverwritten) {
  GgufWriter w;
  w.add_uint32("general.alignment", 256);
  w.add_tensor("t", {4}, DType::kF32, std::vector<uint8_t>(16, 1));
  const Result<std::vector<uint8_t>> bytes = w.to_bytes(64);
  ASSERT_TRUE(bytes.ok());
  const Result<GgufFile> f = parse_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->metadata().size(), 1u);
}

TEST(GgufWriter, RejectsBadInput) {
  {
    GgufWriter w;
    w.add_tensor("t", {4}, DType::kF32, std::vector<uint8_t>(15));
    const Status s = w.to_bytes().status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("'t'"), std::string::npos) << s.message();
  }
  {
    GgufWriter w;
    w.add_tensor("t", {16}, DType::kQ8_0, std::vector<uint8_t>(34));  // 16 is not a multiple of 32
    EXPECT_EQ(w.to_bytes().status().code(), StatusCode::kInvalidArgument);
  }
  {
    GgufWriter w;
    w.add_tensor("t", {1}, DType::kF32, std::vector<uint8_t>(4));
    w.add_tensor("t", {1}, DType::kF32, std::vector<uint8_t>(4));
    EXPECT_EQ(w.to_bytes().status().code(), StatusCode::kInvalidArgument);
  }
  {
    GgufWriter w;
    w.add_tensor("t", {1, 1, 1, 1, 1}, DType::kF32, std::vector<uint8_t>(4));
    EXPECT_EQ(w.to_bytes().status().code(), StatusCode::kInvalidArgument);
  }
  {
    GgufWriter w;
    w.add_tensor("t", {-1}, DType::kF32, {});
    EXPECT_EQ(w.to_bytes().status().code(), StatusCode::kInvalidArgument);
  }
  {
    GgufWriter w;
    EXPECT_EQ(w.to_bytes(0).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(w.to_bytes(48).status().code(), StatusCode::kInvalidArgument);
  }
  {
    GgufWriter w;
    w.add_value("bad", arr(GgufType::kInt32, {sval("not an int")}));
    EXPECT_EQ(w.to_bytes().status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(GgufWriter, WritesAndOpensAFile) {
  const std::string path = ::testing::TempDir() + "gguf_writer_test_" + std::to_string(::getpid()) + ".gguf";
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_tensor("w", {32, 2}, DType::kQ4_0, random_bytes(36, 9));
  ASSERT_TRUE(w.write(path).ok());
  {
    const Result<GgufFile> f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
    EXPECT_EQ(f->find_tensor("w")->n_bytes, 36u);
    EXPECT_EQ(f->find_tensor("w")->data[35], random_bytes(36, 9)[35]);
  }
  std::remove(path.c_str());
  EXPECT_EQ(w.write("/nonexistent/dir/x.gguf").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace tessera
