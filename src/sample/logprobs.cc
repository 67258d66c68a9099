#include "sample/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera {

TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int top_n) {
  float max = -INFINITY;
  for (float v : logits) max = std::max(max, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - max));
  const double log_z = static_cast<double>(max) + std::log(sum);
  TokenLogprobs out;
  out.token = chosen;
  out.logprob = static_cast<float>(logits[static_cast<size_t>(chosen)] - log_z);
  const size_t n = std::min<size_t>(static_cast<size_t>(std::clamp(top_n, 0, kMaxTopLogprobs)), logits.size());
  if (n == 0) return out;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto cmp = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), cmp);
  for (size_t i = 0; i < n; ++i) {
    out.top.emplace_back(ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - log_z));
  }
  return out;
}

}  // namespace tessera
