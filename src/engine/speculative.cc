#include "engine/speculative.h"

#include <algorithm>
#include <vector>

namespace tessera {

uint64_t acceptance_seed(uint64_t seed) {
  return seed ^ 0xa0761d6478bd642full;
}

uint64_t draft_seed(uint64_t seed) {
  return seed ^ 0xe7037ed1a0b428dbull;
}

int32_t verify_position(const Sampler& sampler, int32_t proposed, std::span<const float> q, int64_t position) {
  const double u = Sampler::uniform(sampler.seed(), position);
  if (proposed < 0 || q.empty()) return sampler.draw(u);  // bonus, or one-hot q: the coupled draw
  const std::vector<Sampler::Prob> p = sampler.candidates();
  double px = 0;
  for (const Sampler::Prob& c : p) {
    if (c.id == proposed) px = c.p;
  }
  const double qx = static_cast<double>(q[static_cast<size_t>(proposed)]);
  const double r = Sampler::uniform(acceptance_seed(sampler.seed()), position);
  if (qx <= 0 || r * qx < px) return proposed;  // r < min(1, p/q)
  // Rejected: draw from max(0, p - q), whose support is within p's candidates.
  double total = 0;
  for (const Sampler::Prob& c : p) total += std::max(0.0, c.p - static_cast<double>(q[static_cast<size_t>(c.id)]));
  if (!(total > 0)) return sampler.draw(u);  // p <= q everywhere only by rounding
  const double target = u * total;
  double cum = 0;
  int32_t last = p.back().id;
  for (const Sampler::Prob& c : p) {
    const double w = std::max(0.0, c.p - static_cast<double>(q[static_cast<size_t>(c.id)]));
    if (w <= 0) continue;
    last = c.id;
    cum += w;
    if (target < cum) return c.id;
  }
  return last;
}

}  // namespace tessera
