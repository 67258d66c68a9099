#include "model/model_config.h"

#include <cmath>
#include <cstring>

#include "model/architecture.h"
#include "model/tensor_names.h"

namespace tessera {

namespace {

Result<int> get_positive(const GgufFile& g, const std::string& key) {
  auto v = g.get_int(key);
  if (!v.ok()) return Status(v.status().code(), g.name() + ": " + v.status().message());
  if (*v <= 0 || *v > (1 << 30)) return invalid_argument(g.name() + ": " + key + " = " + std::to_string(*v) + " is out of range");
  return static_cast<int>(*v);
}

Result<int> get_positive_or(const GgufFile& g, const std::string& key, int fallback) {
  if (g.find(key) == nullptr) return fallback;
  return get_positive(g, key);
}

Result<float> get_float_or(const GgufFile& g, const std::string& key, float fallback) {
  if (g.find(key) == nullptr) return fallback;
  auto v = g.get_float(key);
  if (!v.ok()) return Status(v.status().code(), g.name() + ": " + v.status().message());
  if (!std::isfinite(*v)) return invalid_argument(g.name() + ": " + key + " is not finite");
  return static_cast<float>(*v);
}

// llama.cpp's rope_freqs.weight: f32 [n_rot / 2] divisors of the RoPE frequencies.
Result<std::vector<float>> read_rope_freqs(const GgufFile& g, const GgufTensorInfo& t, int n_rot) {
  if (t.dtype != DType::kF32 || t.shape.size() != 1 || t.shape[0] != n_rot / 2) {
    return invalid_argument(g.name() + ": tensor '" + t.name + "' must be f32 [" + std::to_string(n_rot / 2) + "]");
  }
  std::vector<float> out(static_cast<size_t>(n_rot / 2));
  std::memcpy(out.data(), t.data, out.size() * sizeof(float));
  for (float v : out) {
    if (!(v > 0) || !std::isfinite(v)) return invalid_argument(g.name() + ": " + t.name + " values must be positive");
  }
  return out;
}

}  // namespace

std::vector<float> ModelConfig::rope_inv_freq() const {
  std::vector<float> inv(static_cast<size_t>(n_rot / 2));
  for (int i = 0; i < n_rot / 2; ++i) {
    double f = std::pow(static_cast<double>(rope_freq_base), -2.0 * i / n_rot);
    switch (rope_scaling.type) {
      case RopeScalingType::kNone: break;
      case RopeScalingType::kLinear: f /= rope_scaling.factor; break;
      case RopeScalingType::kLlama3: {
        const double pi = 3.14159265358979323846;
        const double wavelen = 2 * pi / f;
        const double low_wavelen = rope_scaling.original_context / rope_scaling.low_freq_factor;
        const double high_wavelen = rope_scaling.original_context / rope_scaling.high_freq_factor;
        if (wavelen > low_wavelen) {
          f /= rope_scaling.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (rope_scaling.original_context / wavelen - rope_scaling.low_freq_factor) /
                                (rope_scaling.high_freq_factor - rope_scaling.low_freq_factor);
          f = (1 - smooth) * f / rope_scaling.factor + smooth * f;
        }
        break;
      }
    }
    if (!rope_freq_factors.empty()) f /= rope_freq_factors[static_cast<size_t>(i)];
    inv[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return inv;
}

Status validate_model_config(const ModelConfig& c, const std::string& source) {
  if (c.n_embd <= 0 || c.n_layers <= 0 || c.n_ff <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0) {
    return invalid_argument(source + ": model sizes must be positive");
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return invalid_argument(source + ": attention head count " + std::to_string(c.n_heads) +
                            " is not a multiple of the key/value head count (head_count_kv) " +
                            std::to_string(c.n_kv_heads));
  }
  if (c.n_rot <= 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0) {
    return invalid_argument(source + ": rotary dimension count " + std::to_string(c.n_rot) + " does not fit head_dim " +
                            std::to_string(c.head_dim));
  }
  if (!(c.rms_eps > 0)) return invalid_argument(source + ": the RMSNorm epsilon must be positive");
  if (!(c.rope_freq_base > 0)) return invalid_argument(source + ": the RoPE base (freq_base / rope_theta) must be positive");
  return {};
}

Result<ModelConfig> model_config_from_gguf(const GgufFile& g) {
  ModelConfig c;
  auto arch = g.get_string("general.architecture");
  if (!arch.ok()) return not_found(g.name() + ": missing general.architecture");
  c.architecture = *arch;
  const ArchitectureInfo* info = find_architecture_gguf(c.architecture);
  if (info == nullptr) return unimplemented(g.name() + ": architecture '" + c.architecture + "' is not supported");
  if (auto n = g.get_string("general.name"); n.ok()) c.name = *n;
  const std::string a = c.architecture + ".";
  TESSERA_ASSIGN_OR_RETURN(c.n_embd, get_positive(g, a + "embedding_length"));
  TESSERA_ASSIGN_OR_RETURN(c.n_layers, get_positive(g, a + "block_count"));
  TESSERA_ASSIGN_OR_RETURN(c.n_ff, get_positive(g, a + "feed_forward_length"));
  TESSERA_ASSIGN_OR_RETURN(c.n_heads, get_positive(g, a + "attention.head_count"));
  TESSERA_ASSIGN_OR_RETURN(c.n_kv_heads, get_positive_or(g, a + "attention.head_count_kv", c.n_heads));
  TESSERA_ASSIGN_OR_RETURN(c.context_length, get_positive_or(g, a + "context_length", 2048));
  TESSERA_ASSIGN_OR_RETURN(c.head_dim, get_positive_or(g, a + "attention.key_length", c.n_embd / c.n_heads));
  TESSERA_ASSIGN_OR_RETURN(c.n_rot, get_positive_or(g, a + "rope.dimension_count", c.head_dim));
  TESSERA_ASSIGN_OR_RETURN(c.rms_eps, get_float_or(g, a + "attention.layer_norm_rms_epsilon", 1e-5f));
  TESSERA_ASSIGN_OR_RETURN(c.rope_freq_base, get_float_or(g, a + "rope.freq_base", 10000.0f));
  TESSERA_RETURN_IF_ERROR(validate_model_config(c, g.name()));
  if (auto st = g.get_string(a + "rope.scaling.type"); st.ok() && *st != "none") {
    TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.factor, get_float_or(g, a + "rope.scaling.factor", 1.0f));
    if (c.rope_scaling.factor <= 0) return invalid_argument(g.name() + ": rope.scaling.factor must be positive");
    if (*st == "linear") {
      c.rope_scaling.type = RopeScalingType::kLinear;
    } else if (*st == "llama3") {
      c.rope_scaling.type = RopeScalingType::kLlama3;
      TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.low_freq_factor, get_float_or(g, a + "rope.scaling.low_freq_factor", 1.0f));
      TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.high_freq_factor, get_float_or(g, a + "rope.scaling.high_freq_factor", 4.0f));
      TESSERA_ASSIGN_OR_RETURN(c.rope_scaling.original_context, get_positive_or(g, a + "rope.scaling.original_context_length", 8192));
      if (c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor) {
        return invalid_argument(g.name() + ": rope.scaling.high_freq_factor must exceed low_freq_factor");
      }
    } else {
      return unimplemented(g.name() + ": rope scaling type '" + *st + "'");
    }
  }
  if (const GgufTensorInfo* t = g.find_tensor(gguf_tensor_name(TensorRole::kRopeFreqs)); t != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(c.rope_freq_factors, read_rope_freqs(g, *t, c.n_rot));
    if (c.rope_scaling.type == RopeScalingType::kLlama3) c.rope_scaling = RopeScaling{};
  }
  c.arch = *info;
  c.rope_style = info->gguf_rope_style;
  auto tokens = g.find("tokenizer.ggml.tokens");
  if (tokens != nullptr) c.n_vocab = static_cast<int>(tokens->array.size());
  return c;
}

}  // namespace tessera
