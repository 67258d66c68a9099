// Helpers shared by the tokenizer tests: loading a GGUF vocabulary and
// synthesising small ones with GgufWriter.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace tessera::testing {

// Opens `path` and builds its tokenizer; fails the test (returns null) on error.
inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  Result<GgufFile> file = GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return nullptr;
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  if (!tok.ok()) return nullptr;
  return std::move(tok).value();
}

// A GGUF held in memory: the bytes live as long as the parsed file.
struct MemoryGguf {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
};

inline MemoryGguf to_memory_gguf(const GgufWriter& w) {
  MemoryGguf m;
  Result<std::vector<uint8_t>> bytes = w.to_bytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return m;
  m.bytes = std::move(bytes).value();
  Result<GgufFile> f = GgufFile::parse(m.bytes.data(), m.bytes.size(), "synthetic.gguf");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (f.ok()) m.file = std::make_unique<GgufFile>(std::move(f).value());
  return m;
}

// A small "llama" vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then
// `extra` tokens with their scores and types.
struct SynthToken {
  std::string text;
  float score;
  int32_t type;
};

inline GgufWriter synth_llama_vocab(const std::vector<SynthToken>& extra) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + kHex[b / 16] + kHex[b % 16] + ">");
    scores.push_back(0);
    types.push_back(6);
  }
  for (const SynthToken& t : extra) {
    tokens.push_back(t.text);
    scores.push_back(t.score);
    types.push_back(t.type);
  }
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_float32_array("tokenizer.ggml.scores", scores);
  w.add_int32_array("tokenizer.ggml.token_type", types);
  w.add_uint32("tokenizer.ggml.bos_token_id", 1);
  w.add_uint32("tokenizer.ggml.eos_token_id", 2);
  w.add_uint32("tokenizer.ggml.unknown_token_id", 0);
  return w;
}

// Id of the first extra token in synth_llama_vocab().
inline constexpr int32_t kFirstExtra = 3 + 256;

}  // namespace tessera::testing
