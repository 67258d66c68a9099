// Microseconds per sampled token for realistic vocabulary sizes. Logits are
// drawn from a normal distribution (a spread like a language model's); the
// settings are typical chat defaults: temperature 0.8, top-k 40, top-p 0.95,
// with repetition / presence / frequency penalties over a 256-token history.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sample/sampler.h"

namespace {

std::vector<float> make_logits(int64_t n_vocab) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (float& v : logits) v = dist(rng);
  return logits;
}

void run(benchmark::State& state, tessera::SamplingParams p) {
  const auto logits = make_logits(state.range(0));
  std::vector<int32_t> history(256);
  for (size_t i = 0; i < history.size(); ++i) history[i] = static_cast<int32_t>((i * 7919) % logits.size());
  tessera::Sampler sampler(p, history);
  for (int32_t t : history) sampler.accept(t);
  int64_t pos = 0;
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, pos++));
  state.counters["us_per_token"] = benchmark::Counter(static_cast<double>(state.iterations()) * 1e-6,
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_SampleTypical(benchmark::State& state) {
  tessera::SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.0f;
  p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.5f;
  run(state, p);
}

void BM_SampleTopPOnly(benchmark::State& state) {
  tessera::SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 0;
  p.top_p = 0.95f;
  p.min_p = 0.0f;
  run(state, p);
}

void BM_Greedy(benchmark::State& state) {
  tessera::SamplingParams p;
  p.temperature = 0.0f;
  run(state, p);
}

}  // namespace

BENCHMARK(BM_SampleTypical)->Arg(32000)->Arg(128256)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleTopPOnly)->Arg(32000)->Arg(128256)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Greedy)->Arg(32000)->Arg(128256)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
