// Tokenizer::encode throughput on ~1 MB of text (English prose with
// punctuation, numbers, code-like lines and some non-ASCII), reported as
// bytes/second by Google Benchmark. One benchmark per vocabulary.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "formats/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string shared_dir() {
  const char* env = std::getenv("TESSERA_SHARED_DIR");
  return env != nullptr && *env != '\0' ? env : TESSERA_DEFAULT_SHARED_DIR;
}

// Deterministic ~1 MB text from a small word list (xorshift choices).
const std::string& bench_text() {
  static const std::string text = [] {
    static const char* kWords[] = {
        "the", "of", "and", "tokenizer", "inference", "engine", "model", "quickly", "Hello", "world",
        "merges", "byte-level", "pair", "encoding", "2024", "3.14159", "don't", "we'll", "it's", "(x)",
        "{\"key\": 1}", "caf\xC3\xA9", "na\xC3\xAFve", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x98\x80", "--", "...",
        "return", "x += 1;", "\t", "Mixture", "ofExperts", "attention", "KV-cache", "42"};
    constexpr size_t kN = sizeof(kWords) / sizeof(kWords[0]);
    std::string s;
    s.reserve(1 << 20);
    uint64_t x = 88172645463325252ull;
    while (s.size() < (1u << 20)) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      s += kWords[x % kN];
      const uint64_t r = (x >> 20) % 16;
      s += r == 0 ? ".\n" : r == 1 ? ", " : r == 2 ? "  " : " ";
    }
    return s;
  }();
  return text;
}

void run(benchmark::State& state, const char* vocab) {
  const std::string path = shared_dir() + "/testdata/tokenizer/" + vocab;
  auto file = tessera::GgufFile::open(path);
  if (!file.ok()) {
    state.SkipWithError(file.status().to_string().c_str());
    return;
  }
  auto tok = tessera::Tokenizer::from_gguf(*file);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().to_string().c_str());
    return;
  }
  const std::string& text = bench_text();
  size_t n_tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = (*tok)->encode(text, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_EncodeSpmLlama(benchmark::State& state) { run(state, "ggml-vocab-llama-spm.gguf"); }
void BM_EncodeBpeGpt2(benchmark::State& state) { run(state, "ggml-vocab-gpt-2.gguf"); }
void BM_EncodeBpeDeepseek(benchmark::State& state) { run(state, "ggml-vocab-deepseek-llm.gguf"); }

BENCHMARK(BM_EncodeSpmLlama)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeBpeGpt2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeBpeDeepseek)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
