#include "tessera/sampling_params.h"

#include <cmath>
#include <string>

namespace tessera {

namespace {
std::string num(double v) {
  return std::to_string(v);
}
}  // namespace

Status SamplingParams::validate(int32_t n_vocab) const {
  if (!std::isfinite(temperature) || temperature < 0)
    return invalid_argument("temperature must be >= 0, got " + num(temperature));
  if (!(top_p > 0 && top_p <= 1)) return invalid_argument("top_p must be in (0, 1], got " + num(top_p));
  if (!(min_p >= 0 && min_p <= 1)) return invalid_argument("min_p must be in [0, 1], got " + num(min_p));
  if (!(typical_p > 0 && typical_p <= 1)) return invalid_argument("typical_p must be in (0, 1], got " + num(typical_p));
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty)) {
    return invalid_argument("repetition_penalty must be > 0, got " + num(repetition_penalty));
  }
  if (!(presence_penalty >= -2 && presence_penalty <= 2)) {
    return invalid_argument("presence_penalty must be in [-2, 2], got " + num(presence_penalty));
  }
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2)) {
    return invalid_argument("frequency_penalty must be in [-2, 2], got " + num(frequency_penalty));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return invalid_argument("logit_bias token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(n_vocab - 1) + ")");
    }
    if (!std::isfinite(bias)) return invalid_argument("logit_bias for token " + std::to_string(id) + " is not finite");
  }
  return {};
}

}  // namespace tessera
