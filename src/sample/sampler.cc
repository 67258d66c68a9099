#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera {

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0) {
    return invalid_argument("temperature must be >= 0, got " + std::to_string(temperature));
  }
  if (!(top_p > 0 && top_p <= 1)) return invalid_argument("top_p must be in (0, 1], got " + std::to_string(top_p));
  if (!(min_p >= 0 && min_p <= 1)) return invalid_argument("min_p must be in [0, 1], got " + std::to_string(min_p));
  return {};
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

namespace {
// The splitmix64 finaliser (Steele et al. 2014): a bijective 64-bit mix.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

double Sampler::uniform(uint64_t seed, int64_t position) {
  // A splitmix64 stream whose start is the mixed seed, read at `position`:
  // counter-based, so draws depend only on (seed, position).
  const uint64_t z = mix64(mix64(seed) + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(position) + 1));
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<const float> logits, int64_t position) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  const float inv_t = 1.0f / params_.temperature;
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {logits[i] * inv_t, static_cast<int32_t>(i)};
  auto by_value = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t n = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n), candidates_.end(), by_value);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_value);
  }
  // Softmax over the kept candidates, in double for a stable cumulative sum.
  const float max = candidates_[0].first;
  std::vector<double> p(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp(static_cast<double>(candidates_[i].first - max));
  for (double& v : p) v /= sum;
  if (params_.top_p < 1.0f) {
    double cum = 0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += p[i];
      if (cum >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  if (params_.min_p > 0.0f) {
    const double threshold = params_.min_p * p[0];
    size_t keep = 1;
    while (keep < n && p[keep] >= threshold) ++keep;
    n = keep;
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += p[i];
  const double u = uniform(params_.seed, position) * total;
  double cum = 0;
  for (size_t i = 0; i < n; ++i) {
    cum += p[i];
    if (u < cum) return candidates_[i].second;
  }
  return candidates_[n - 1].second;
}

}  // namespace tessera
