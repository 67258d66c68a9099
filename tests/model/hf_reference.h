// The reference.json of a Hugging Face fixture (../shared/fixtures/hf/<name>/):
// per case, transformers' float32 results for `input_ids` fed without BOS.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace tessera::testing {

struct HfReference {
  std::vector<int32_t> input_ids;
  std::vector<float> last_logits;            // [n_vocab] logits of the last position
  std::vector<int32_t> argmax_per_position;  // [n_tokens]
  std::vector<double> logits_rows_sum;       // [n_tokens] sum of each position's logits
  std::vector<int32_t> greedy_continuation;  // 24 tokens, plain argmax without cache
};

inline std::vector<HfReference> load_hf_reference(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<HfReference> out;
  for (const auto& c : j.at("cases")) {
    out.push_back({c.at("input_ids").get<std::vector<int32_t>>(), c.at("last_logits").get<std::vector<float>>(),
                   c.at("argmax_per_position").get<std::vector<int32_t>>(),
                   c.at("logits_rows_sum").get<std::vector<double>>(),
                   c.at("greedy_continuation").get<std::vector<int32_t>>()});
  }
  return out;
}

}  // namespace tessera::testing
