#include "model/hf_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace tessera {

namespace {

using nlohmann::json;

class Fields {
 public:
  Fields(const json& j, const std::string& source) : j_(j), source_(source) {}

  Result<int> get_int(const char* key, std::optional<int> fallback = std::nullopt) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (fallback) return *fallback;
      return not_found(source_ + ": missing required field '" + key + "'");
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > (1 << 30)) {
      return invalid_argument(source_ + ": field '" + key + "' must be a positive integer");
    }
    return static_cast<int>(it->get<int64_t>());
  }

  Result<float> get_float(const json& obj, const char* key, float fallback) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_number()) return invalid_argument(source_ + ": field '" + key + "' must be a number");
    const double v = it->get<double>();
    if (!std::isfinite(v)) return invalid_argument(source_ + ": field '" + key + "' must be finite");
    return static_cast<float>(v);
  }

 private:
  const json& j_;
  const std::string& source_;
};

Result<json> parse_object(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(source + ": not a valid JSON object");
  return j;
}

// RoPE base and scaling from `rope_parameters` (transformers >= 4.5x) or the
// older top-level `rope_theta` + `rope_scaling`.
Status read_rope(const json& j, const Fields& f, const std::string& source, ModelConfig& c) {
  const json empty = json::object();
  const json* params = &empty;
  if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) params = &*it;
  const json* scaling = params;
  if (auto it = j.find("rope_scaling"); it != j.end() && it->is_object()) scaling = &*it;
  TESSERA_ASSIGN_OR_RETURN(float theta, f.get_float(j, "rope_theta", 10000.0f));
  TESSERA_ASSIGN_OR_RETURN(c.rope_freq_base, f.get_float(*params, "rope_theta", theta));
  TESSERA_ASSIGN_OR_RETURN(float partial, f.get_float(*params, "partial_rotary_factor", 1.0f));
  TESSERA_ASSIGN_OR_RETURN(partial, f.get_float(j, "partial_rotary_factor", partial));
  c.n_rot = static_cast<int>(std::lround(c.head_dim * partial));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (auto it = scaling->find(key); it != scaling->end() && it->is_string()) type = it->get<std::string>();
  }
  if (type == "default") return {};
  TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.factor, f.get_float(*scaling, "factor", 1.0f));
  if (!(c.rope_scaling.factor > 0)) return invalid_argument(source + ": rope scaling factor must be positive");
  if (type == "linear") {
    c.rope_scaling.type = RopeScalingType::kLinear;
  } else if (type == "llama3") {
    c.rope_scaling.type = RopeScalingType::kLlama3;
    TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.low_freq_factor, f.get_float(*scaling, "low_freq_factor", 1.0f));
    TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.high_freq_factor, f.get_float(*scaling, "high_freq_factor", 4.0f));
    TESSERA_ASSIGN_OR_RETURN(float orig, f.get_float(*scaling, "original_max_position_embeddings", 8192.0f));
    c.rope_scaling.original_context = static_cast<int>(orig);
    if (c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor || c.rope_scaling.original_context <= 0) {
      return invalid_argument(source + ": invalid llama3 rope scaling parameters");
    }
  } else {
    return unimplemented(source + ": rope scaling type '" + type + "' is not supported");
  }
  return {};
}

}  // namespace

Result<ModelConfig> model_config_from_hf_json(const std::string& text, const std::string& source) {
  TESSERA_ASSIGN_OR_RETURN(json j, parse_object(text, source));
  auto archs = j.find("architectures");
  if (archs == j.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    return not_found(source + ": missing required field 'architectures'");
  }
  const std::string hf_name = (*archs)[0].get<std::string>();
  const ArchitectureInfo* info = find_architecture_hf(hf_name);
  if (info == nullptr) return unimplemented(source + ": architecture '" + hf_name + "' is not supported");
  const Fields f(j, source);
  ModelConfig c;
  c.architecture = std::string(info->gguf_name);
  c.arch = *info;
  c.rope_style = RopeStyle::kNeox;  // HF checkpoints rotate halves (rotate_half)
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string()) c.name = it->get<std::string>();
  TESSERA_ASSIGN_OR_RETURN(c.n_vocab, f.get_int("vocab_size"));
  TESSERA_ASSIGN_OR_RETURN(c.n_embd, f.get_int("hidden_size"));
  TESSERA_ASSIGN_OR_RETURN(c.n_layers, f.get_int("num_hidden_layers"));
  TESSERA_ASSIGN_OR_RETURN(c.n_ff, f.get_int("intermediate_size"));
  TESSERA_ASSIGN_OR_RETURN(c.n_heads, f.get_int("num_attention_heads"));
  TESSERA_ASSIGN_OR_RETURN(c.n_kv_heads, f.get_int("num_key_value_heads", c.n_heads));
  TESSERA_ASSIGN_OR_RETURN(c.head_dim, f.get_int("head_dim", c.n_embd / c.n_heads));
  TESSERA_ASSIGN_OR_RETURN(c.context_length, f.get_int("max_position_embeddings", 2048));
  TESSERA_ASSIGN_OR_RETURN(c.rms_eps, f.get_float(j, "rms_norm_eps", 1e-6f));
  TESSERA_RETURN_IF_ERROR(read_rope(j, f, source, c));
  TESSERA_RETURN_IF_ERROR(validate_model_config(c, source));
  return c;
}

Result<GenerationDefaults> generation_defaults_from_json(const std::string& text, const std::string& source) {
  TESSERA_ASSIGN_OR_RETURN(json j, parse_object(text, source));
  GenerationDefaults g;
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    const json list = it->is_array() ? *it : json::array({*it});
    for (const auto& v : list) {
      if (!v.is_number_integer())
        return invalid_argument(source + ": eos_token_id must be an integer or a list of them");
      g.eos_token_ids.push_back(v.get<int32_t>());
    }
  }
  if (auto it = j.find("bos_token_id"); it != j.end() && it->is_number_integer()) g.bos_token_id = it->get<int32_t>();
  if (auto it = j.find("temperature"); it != j.end() && it->is_number()) g.temperature = it->get<float>();
  if (auto it = j.find("top_p"); it != j.end() && it->is_number()) g.top_p = it->get<float>();
  if (auto it = j.find("top_k"); it != j.end() && it->is_number_integer()) g.top_k = it->get<int32_t>();
  return g;
}

}  // namespace tessera
