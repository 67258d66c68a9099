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

namespace {
bool by_logit(const auto& a, const auto& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
}  // namespace

// The k best finite logits of work_, sorted, by one scan with a size-k
// min-heap: O(V) with rare O(log k) updates, no copy of the vocabulary.
void Sampler::select_top_k(size_t k) {
  cand_.clear();
  auto worse_on_top = [](const Candidate& a, const Candidate& b) { return by_logit(a, b); };
  for (size_t i = 0; i < work_.size(); ++i) {
    const float v = work_[i];
    if (v == kNegInf) continue;
    const Candidate c{static_cast<int32_t>(i), v, 0.0};
    if (cand_.size() < k) {
      cand_.push_back(c);
      std::push_heap(cand_.begin(), cand_.end(), worse_on_top);
    } else if (by_logit(c, cand_.front())) {
      std::pop_heap(cand_.begin(), cand_.end(), worse_on_top);
      cand_.back() = c;
      std::push_heap(cand_.begin(), cand_.end(), worse_on_top);
    }
  }
  std::sort(cand_.begin(), cand_.end(), by_logit<Candidate, Candidate>);
  sorted_ = true;
}

// Keeps the smallest prefix (in descending probability) whose mass reaches
// top_p. Orders progressively larger heads with nth_element + sort instead
// of sorting the whole vocabulary.
void Sampler::truncate_top_p() {
  const size_t n = cand_.size();
  double total = 0;
  for (const Candidate& c : cand_) total += c.p;
  const double target = params_.top_p * total;
  size_t head = sorted_ ? n : std::min<size_t>(n, 64);
  for (;;) {
    if (!sorted_) {
      std::nth_element(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(head - 1), cand_.end(),
                       by_logit<Candidate, Candidate>);
      std::sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(head), by_logit<Candidate, Candidate>);
    }
    double cum = 0;
    for (size_t i = 0; i < head; ++i) {
      cum += cand_[i].p;
      if (cum >= target) {
        cand_.resize(i + 1);
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
void Sampler::apply_typical() {
  double total = 0;
  for (const Candidate& c : cand_) total += c.p;
  double entropy = 0;
  for (const Candidate& c : cand_) {
    if (c.p > 0) entropy -= (c.p / total) * std::log(c.p / total);
  }
  auto dist = [&](const Candidate& c) { return std::fabs(-std::log(c.p / total) - entropy); };
  std::sort(cand_.begin(), cand_.end(), [&](const Candidate& a, const Candidate& b) {
    const double da = dist(a), db = dist(b);
    return da < db || (da == db && a.id < b.id);
  });
  double cum = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += cand_[i].p / total;
    if (cum >= params_.typical_p) {
      cand_.resize(i + 1);
      break;
    }
  }
  sorted_ = false;
}

Status Sampler::prepare(std::span<const float> logits, std::span<const int32_t> suppressed) {
  work_.assign(logits.begin(), logits.end());
  for (const auto& [id, bias] : params_.logit_bias) work_[static_cast<size_t>(id)] += bias;
  apply_penalties(work_);
  for (int32_t id : suppressed) {
    if (id >= 0 && static_cast<size_t>(id) < work_.size()) work_[static_cast<size_t>(id)] = kNegInf;
  }
  // One pass: reject NaN / +Inf and find the best token.
  size_t best = 0;
  bool bad = false;
  for (size_t i = 0; i < work_.size(); ++i) {
    const float v = work_[i];
    bad |= std::isnan(v) || v == std::numeric_limits<float>::infinity();
    if (v > work_[best]) best = i;
  }
  if (bad || std::isnan(work_[0])) return invalid_argument("the model produced NaN or +Inf logits");
  if (work_[best] == kNegInf) return invalid_argument("every token has zero probability");
  if (params_.temperature <= 0.0f) {
    cand_.assign(1, Candidate{static_cast<int32_t>(best), work_[best], 1.0});
    total_ = 1.0;
    return {};
  }

  const float inv_t = 1.0f / params_.temperature;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < work_.size()) {
    select_top_k(static_cast<size_t>(params_.top_k));
  } else {
    cand_.clear();
    for (size_t i = 0; i < work_.size(); ++i) {
      if (work_[i] != kNegInf) cand_.push_back({static_cast<int32_t>(i), work_[i], 0.0});
    }
    sorted_ = false;
  }
  // Softmax numerators relative to the best token (p = 1 for it).
  const float max = work_[best] * inv_t;
  for (Candidate& c : cand_) {
    c.logit *= inv_t;
    c.p = std::exp(static_cast<double>(c.logit - max));
  }
  if (params_.top_p < 1.0f) truncate_top_p();
  if (params_.min_p > 0.0f) {
    std::erase_if(cand_, [&](const Candidate& c) { return c.p < params_.min_p; });
  }
  if (params_.typical_p < 1.0f && cand_.size() > 1) apply_typical();
  total_ = 0;
  for (const Candidate& c : cand_) total_ += c.p;
  return {};
}

int32_t Sampler::draw(double uniform01) const {
  const double u = uniform01 * total_;
  double cum = 0;
  for (const Candidate& c : cand_) {
    cum += c.p;
    if (u < cum) return c.id;
  }
  return cand_.back().id;
}

std::vector<Sampler::Prob> Sampler::candidates() const {
  std::vector<Prob> out;
  out.reserve(cand_.size());
  for (const Candidate& c : cand_) out.push_back({c.id, c.p / total_});
  return out;
}

Result<int32_t> Sampler::sample(std::span<const float> logits, int64_t position, std::span<const int32_t> suppressed) {
  TESSERA_RETURN_IF_ERROR(prepare(logits, suppressed));
  if (params_.temperature <= 0.0f) return cand_[0].id;
  return draw(uniform(params_.seed, position));
}

}  // namespace tessera
