#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tessera {

namespace {

// The splitmix64 finaliser (Steele et al. 2014): a bijective 64-bit mix.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

uint64_t choice_seed(uint64_t seed, int32_t index) {
  return index == 0 ? seed : mix64(seed ^ (0x632be59bd9b4e019ull * static_cast<uint64_t>(index)));
}

double Sampler::uniform(uint64_t seed, int64_t position) {
  // A splitmix64 stream whose start is the mixed seed, read at `position`:
  // counter-based, so draws depend only on (seed, position).
  const uint64_t z = mix64(mix64(seed) + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(position) + 1));
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

Sampler::Sampler(const SamplingParams& params, std::span<const int32_t> prompt) : params_(params) {
  if (params_.repetition_penalty != 1.0f) seen_.insert(prompt.begin(), prompt.end());
}

void Sampler::accept(int32_t token) {
  if (params_.repetition_penalty != 1.0f) seen_.insert(token);
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) ++out_counts_[token];
}

void Sampler::apply_penalties(std::vector<float>& logits) const {
  const float rp = params_.repetition_penalty;
  for (int32_t id : seen_) {
    float& l = logits[static_cast<size_t>(id)];
    l = l > 0 ? l / rp : l * rp;
  }
  for (const auto& [id, count] : out_counts_) {
    logits[static_cast<size_t>(id)] -= params_.presence_penalty + params_.frequency_penalty * static_cast<float>(count);
  }
}

// Keeps the smallest prefix (in descending probability) whose mass reaches
// top_p. Sorts progressively larger heads with nth_element + sort instead of
// the whole vocabulary.
void Sampler::truncate_top_p(std::vector<double>& p) {
  const size_t n = cand_.size();
  auto by_logit = [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
  double total = 0;
  for (double v : p) total += v;
  const double target = params_.top_p * total;
  size_t head = sorted_ ? n : std::min<size_t>(n, 64);
  for (;;) {
    if (!sorted_) {
      // p is indexed like cand_: recompute it after reordering.
      std::vector<size_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = i;
      auto cmp = [&](size_t a, size_t b) { return by_logit(cand_[a], cand_[b]); };
      std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(head - 1), order.end(), cmp);
      std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(head), cmp);
      std::vector<Candidate> c2(n);
      std::vector<double> p2(n);
      for (size_t i = 0; i < n; ++i) {
        c2[i] = cand_[order[i]];
        p2[i] = p[order[i]];
      }
      cand_.swap(c2);
      p.swap(p2);
      if (head == n) sorted_ = true;
    }
    double cum = 0;
    for (size_t i = 0; i < head; ++i) {
      cum += p[i];
      if (cum >= target) {
        cand_.resize(i + 1);
        p.resize(i + 1);
        sorted_ = true;
        return;
      }
    }
    if (head == n) return;  // rounding: keep everything
    head = std::min(n, head * 8);
  }
}

// Locally typical sampling: keep the tokens whose surprisal is closest to the
// entropy until their mass reaches typical_p.
void Sampler::apply_typical(std::vector<double>& p) {
  double total = 0;
  for (double v : p) total += v;
  double entropy = 0;
  for (double v : p) {
    if (v > 0) entropy -= (v / total) * std::log(v / total);
  }
  std::vector<size_t> order(p.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto dist = [&](size_t i) { return std::fabs(-std::log(p[i] / total) - entropy); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double da = dist(a), db = dist(b);
    return da < db || (da == db && cand_[a].id < cand_[b].id);
  });
  double cum = 0;
  size_t keep = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    cum += p[order[i]] / total;
    if (cum >= params_.typical_p) {
      keep = i + 1;
      break;
    }
  }
  std::vector<Candidate> c2(keep);
  std::vector<double> p2(keep);
  for (size_t i = 0; i < keep; ++i) {
    c2[i] = cand_[order[i]];
    p2[i] = p[order[i]];
  }
  cand_.swap(c2);
  p.swap(p2);
  sorted_ = false;
}

Result<int32_t> Sampler::sample(std::span<const float> logits, int64_t position, std::span<const int32_t> suppressed) {
  work_.assign(logits.begin(), logits.end());
  for (float v : work_) {
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      return invalid_argument("the model produced NaN or +Inf logits");
    }
  }
  for (const auto& [id, bias] : params_.logit_bias) work_[static_cast<size_t>(id)] += bias;
  apply_penalties(work_);
  for (int32_t id : suppressed) {
    if (id >= 0 && static_cast<size_t>(id) < work_.size()) work_[static_cast<size_t>(id)] = kNegInf;
  }
  const int32_t best = argmax(work_);
  if (work_[static_cast<size_t>(best)] == kNegInf) return invalid_argument("every token has zero probability");
  if (params_.temperature <= 0.0f) return best;

  const float inv_t = 1.0f / params_.temperature;
  cand_.clear();
  for (size_t i = 0; i < work_.size(); ++i) {
    if (work_[i] != kNegInf) cand_.push_back({static_cast<int32_t>(i), work_[i] * inv_t});
  }
  sorted_ = false;
  auto by_logit = [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < cand_.size()) {
    const auto k = static_cast<std::ptrdiff_t>(params_.top_k);
    std::nth_element(cand_.begin(), cand_.begin() + k - 1, cand_.end(), by_logit);
    cand_.resize(static_cast<size_t>(k));
    std::sort(cand_.begin(), cand_.end(), by_logit);
    sorted_ = true;
  }
  // Softmax over the candidates (one pass for the max, one for exp).
  const float max = work_[static_cast<size_t>(best)] * inv_t;
  std::vector<double> p(cand_.size());
  for (size_t i = 0; i < cand_.size(); ++i) p[i] = std::exp(static_cast<double>(cand_[i].logit - max));
  if (params_.top_p < 1.0f) truncate_top_p(p);
  if (params_.min_p > 0.0f) {
    // The max-probability token has p = exp(0) = 1 before normalisation.
    size_t out = 0;
    for (size_t i = 0; i < cand_.size(); ++i) {
      if (p[i] >= params_.min_p) {
        cand_[out] = cand_[i];
        p[out++] = p[i];
      }
    }
    cand_.resize(out);
    p.resize(out);
  }
  if (params_.typical_p < 1.0f && cand_.size() > 1) apply_typical(p);
  double total = 0;
  for (double v : p) total += v;
  const double u = uniform(params_.seed, position) * total;
  double cum = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += p[i];
    if (u < cum) return cand_[i].id;
  }
  return cand_.back().id;
}

}  // namespace tessera
