#include "engine/spec_goodput.h"

#include <algorithm>
#include <cmath>

namespace tessera {

void StepTimeModel::observe(int64_t rows, double ms) {
  if (rows < 1 || !(ms >= 0) || !std::isfinite(ms)) return;
  const int64_t r = std::min(rows, kMaxRows);
  if (ms_.empty()) ms_.assign(static_cast<size_t>(kMaxRows + 1), 0.0);
  auto it = std::lower_bound(measured_.begin(), measured_.end(), r);
  double& slot = ms_[static_cast<size_t>(r)];
  if (it == measured_.end() || *it != r) {
    measured_.insert(it, r);
    slot = ms;
  } else {
    slot += kSmoothing * (ms - slot);
  }
}

double StepTimeModel::estimate(int64_t rows) const {
  if (measured_.empty()) return 0;
  const int64_t r = std::clamp<int64_t>(rows, 1, kMaxRows);
  auto hi = std::lower_bound(measured_.begin(), measured_.end(), r);
  if (hi == measured_.end()) return ms_[static_cast<size_t>(measured_.back())];
  if (*hi == r) return ms_[static_cast<size_t>(r)];
  // Below the smallest: proportional to the rows (optimistic, so a smaller
  // step — the one without proposals — is tried and then known).
  if (hi == measured_.begin()) return ms_[static_cast<size_t>(*hi)] * static_cast<double>(r) / static_cast<double>(*hi);
  const int64_t r1 = *hi, r0 = *(hi - 1);
  const double t0 = ms_[static_cast<size_t>(r0)], t1 = ms_[static_cast<size_t>(r1)];
  return t0 + (t1 - t0) * static_cast<double>(r - r0) / static_cast<double>(r1 - r0);
}

double expected_emitted_tokens(double alpha, int32_t m) {
  double sum = 1, term = 1;
  for (int32_t i = 0; i < m; ++i) {
    term *= alpha;
    sum += term;
  }
  return sum;
}

int32_t choose_lookahead_cap(std::span<const SpecCandidate> seqs, int64_t other_rows, const StepTimeModel& step_ms,
                             const std::function<double(int32_t)>& draft_ms) {
  int32_t max_cap = 0;
  for (const SpecCandidate& s : seqs) max_cap = std::max(max_cap, s.max_tokens);
  if (max_cap == 0 || step_ms.empty()) return max_cap;
  const auto n = static_cast<int64_t>(seqs.size());
  int32_t best = 0;
  double best_goodput = -1;
  for (int32_t cap = 0; cap <= max_cap; ++cap) {
    double tokens = static_cast<double>(other_rows);
    int64_t rows = other_rows + n;
    for (const SpecCandidate& s : seqs) {
      const int32_t m = std::min(cap, s.max_tokens);
      tokens += expected_emitted_tokens(std::clamp(s.alpha, 0.0, 1.0), m);
      rows += m;
    }
    const double ms = step_ms.estimate(rows) + (cap > 0 && draft_ms ? draft_ms(cap) : 0.0);
    // Zero time (a measurement below the clock's resolution): compare tokens alone.
    const double goodput = ms > 0 ? tokens / ms : tokens * 1e12;
    if (goodput > best_goodput * (1 + 1e-9)) {
      best_goodput = goodput;
      best = cap;
    }
  }
  return best;
}

void AcceptanceEstimate::observe(int32_t proposed, int32_t accepted) {
  accepted = std::clamp(accepted, 0, proposed);
  for (int32_t i = 0; i < accepted; ++i) alpha_ += kSmoothing * (1.0 - alpha_);
  if (accepted < proposed) alpha_ += kSmoothing * (0.0 - alpha_);
}

}  // namespace tessera
