#include "model/quantize_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "core/cpu_features.h"
#include "core/finite_check.h"
#include "core/quant_ref.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "model/convert_hf.h"
#include "model/tensor_names.h"

namespace tessera {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// llama.cpp's use_more_bits(i_layer, n_layers).
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// Layer index of "blk.N.xxx", or -1.
int layer_of(std::string_view name) {
  if (!name.starts_with(kGgufLayerPrefix)) return -1;
  int v = 0;
  size_t i = kGgufLayerPrefix.size();
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) v = v * 10 + (name[i] - '0');
  return i > kGgufLayerPrefix.size() ? v : -1;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Whether `name` ends with "." and the GGUF name of per-layer `role`.
bool ends_with_role(std::string_view name, TensorRole role) {
  const std::string_view suffix = tensor_name_entry(role).gguf;
  return ends_with(name, suffix) && name.size() > suffix.size() && name[name.size() - suffix.size() - 1] == '.';
}

// A row quantize_model refuses: its index and why.
struct BadRow {
  int64_t row = -1;
  std::string why;
};

// Tensor `t` (any readable dtype) as f32 [rows, cols] rows r0..r1 -> `dst`
// quantized rows of `out_t` (copied when out_t is t's type). Refuses the
// first row holding an Inf/NaN, or whose values overflow out_t's f16 scales
// (or f16 itself): the stored row would dequantize to Inf/NaN.
std::optional<BadRow> requantize_rows(const GgufTensorInfo& t, DType out_t, int64_t cols, int64_t r0, int64_t r1,
                                      uint8_t* dst) {
  std::vector<float> row(static_cast<size_t>(cols));    // [cols]
  std::vector<float> check(static_cast<size_t>(cols));  // [cols] the stored row, dequantized
  const size_t in_row = dtype_row_bytes(*t.dtype, cols);
  const size_t out_row = dtype_row_bytes(out_t, cols);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* src = t.data + static_cast<size_t>(r) * in_row;
    uint8_t* out = dst + static_cast<size_t>(r) * out_row;
    dequantize_row(*t.dtype, src, row.data(), cols);
    if (auto nf = first_nonfinite_value(row.data(), cols)) {
      return BadRow{r, "column " + std::to_string(nf->index) + ": " + nf->what};
    }
    if (out_t == *t.dtype) {
      std::copy(src, src + in_row, out);
      continue;
    }
    quantize_row(out_t, row.data(), out, cols);
    dequantize_row(out_t, out, check.data(), cols);
    if (auto nf = first_nonfinite_value(check.data(), cols)) {
      // Name the largest value, the one to fix: the first non-finite one
      // stored is often another column of its block.
      size_t at = 0;
      for (size_t i = 1; i < row.size(); ++i) at = std::fabs(row[i]) > std::fabs(row[at]) ? i : at;
      return BadRow{r, "values up to |x| = " + fmt::format("{:g}", std::fabs(row[at])) + " (column " +
                           std::to_string(at) + ") overflow the f16 scales of " + std::string(dtype_name(out_t)) +
                           " (they would be stored as " + nonfinite_name(check[static_cast<size_t>(nf->index)]) + ")"};
    }
  }
  return std::nullopt;
}

// Where a mix gives a per-layer tensor more bits (the table in
// quantize_model.h): `hit` in the layers `when` picks, `miss` (nullopt: the
// base type) in the others.
struct LayerRule {
  enum When : uint8_t { kNever, kAlways, kFirstLayers, kFirstFraction, kMoreBits };
  When when = kNever;
  int count = 0;  // kFirstLayers: layer < count; kFirstFraction: layer < n_layers / count
  DType hit = DType::kQ6_K;
  std::optional<DType> miss;

  std::optional<DType> type(int layer, int n_layers) const {
    bool picked = false;
    switch (when) {
      case kNever:
        return std::nullopt;
      case kAlways:
        picked = true;
        break;
      case kFirstLayers:
        picked = layer < count;
        break;
      case kFirstFraction:
        picked = layer < n_layers / count;
        break;
      case kMoreBits:
        picked = use_more_bits(layer, n_layers);
        break;
    }
    return picked ? std::optional<DType>(hit) : miss;
  }
};

struct MixEntry {
  std::string_view name;
  QuantMix mix;
  DType base;
  uint32_t file_type;  // llama_ftype
  LayerRule attn_v, ffn_down;
  std::optional<DType> attn_output, attn_qkv;  // nullopt: the base type
};

using R = LayerRule;
constexpr DType kQ4K = DType::kQ4_K, kQ5K = DType::kQ5_K, kQ6K = DType::kQ6_K;
// One line per mix: name, mix, base, llama_ftype, attn_v, ffn_down, attn_output, attn_qkv.
// clang-format off
const MixEntry kMixes[] = {
    {"q3_k_s", QuantMix::kQ3_K_S, DType::kQ3_K, 11, {}, {}, {}, {}},
    {"q3_k_m", QuantMix::kQ3_K_M, DType::kQ3_K, 12, {R::kFirstLayers, 2, kQ5K, kQ4K}, {R::kFirstFraction, 16, kQ5K, kQ4K}, kQ4K, kQ4K},
    {"q3_k_l", QuantMix::kQ3_K_L, DType::kQ3_K, 13, {R::kAlways, 0, kQ5K, {}}, {R::kAlways, 0, kQ5K, {}}, kQ5K, kQ4K},
    {"q4_k_s", QuantMix::kQ4_K_S, DType::kQ4_K, 14, {R::kFirstLayers, 4, kQ5K, {}}, {R::kFirstFraction, 8, kQ5K, {}}, {}, {}},
    {"q4_k_m", QuantMix::kQ4_K_M, DType::kQ4_K, 15, {R::kMoreBits, 0, kQ6K, {}}, {R::kMoreBits, 0, kQ6K, {}}, {}, kQ5K},
    {"q5_k_s", QuantMix::kQ5_K_S, DType::kQ5_K, 16, {}, {}, {}, {}},
    {"q5_k_m", QuantMix::kQ5_K_M, DType::kQ5_K, 17, {R::kMoreBits, 0, kQ6K, {}}, {R::kMoreBits, 0, kQ6K, {}}, {}, kQ6K},
};
// clang-format on

const MixEntry* find_mix(QuantMix mix) {
  for (const MixEntry& m : kMixes) {
    if (m.mix == mix) return &m;
  }
  return nullptr;
}

// The mix's type for a layer's attn_v / ffn_down / attn_output / attn_qkv,
// or nullopt for the base type.
std::optional<DType> mix_layer_type(const MixEntry& m, std::string_view name, int layer, int n_layers) {
  if (ends_with_role(name, TensorRole::kAttnV)) return m.attn_v.type(layer, n_layers);
  if (ends_with_role(name, TensorRole::kFfnDown)) return m.ffn_down.type(layer, n_layers);
  if (ends_with_role(name, TensorRole::kAttnOutput)) return m.attn_output;
  if (ends_with_role(name, TensorRole::kAttnQkv)) return m.attn_qkv;
  return std::nullopt;
}

}  // namespace

std::optional<QuantScheme> quant_scheme_from_name(std::string_view name) {
  const std::string n = lower(name);
  for (const MixEntry& m : kMixes) {
    if (n == m.name) return QuantScheme{n, m.base, m.mix};
  }
  const std::optional<DType> t = dtype_from_name(n);
  if (!t || *t == DType::kQ8_K) return std::nullopt;
  return QuantScheme{n, *t, QuantMix::kNone};
}

std::vector<std::string> quant_scheme_names() {
  std::vector<std::string> names;
  for (DType t : kAllDTypes) {
    if (t != DType::kQ8_K) names.emplace_back(dtype_name(t));
  }
  for (const MixEntry& m : kMixes) names.emplace_back(m.name);
  return names;
}

DType quant_scheme_tensor_type(const QuantScheme& s, std::string_view name, int n_layers, bool has_output) {
  if (s.mix == QuantMix::kNone) return s.base;
  if (name == tensor_name_entry(TensorRole::kOutput).gguf ||
      (!has_output && name == tensor_name_entry(TensorRole::kTokenEmbd).gguf)) {
    return DType::kQ6_K;
  }
  const int layer = layer_of(name);
  const MixEntry* m = find_mix(s.mix);
  if (layer >= 0 && m != nullptr) {
    if (std::optional<DType> t = mix_layer_type(*m, name, layer, n_layers)) return *t;
  }
  return s.base;
}

std::string quant_fallback_note(std::string_view name, int64_t cols, DType want, DType got) {
  return fmt::format("{}: row size {} is not a multiple of {} for {}, using {}", name, cols, dtype_block_elems(want),
                     dtype_name(want), dtype_name(got));
}

DType quant_fallback_type(DType t, int64_t cols) {
  if (cols % dtype_block_elems(t) == 0) return t;
  DType f = t;
  switch (t) {
    case DType::kQ2_K:
    case DType::kQ3_K:
      f = DType::kQ4_0;
      break;
    case DType::kQ4_K:
      f = DType::kQ5_0;
      break;
    case DType::kQ5_K:
      f = DType::kQ5_1;
      break;
    case DType::kQ6_K:
    case DType::kQ8_K:
      f = DType::kQ8_0;
      break;
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
      f = DType::kF16;
      break;
  }
  return cols % dtype_block_elems(f) == 0 ? f : DType::kF16;
}

uint32_t quant_scheme_file_type(const QuantScheme& s) {
  if (const MixEntry* m = find_mix(s.mix)) return m->file_type;
  switch (s.base) {
    case DType::kF32:
      return 0;
    case DType::kF16:
      return 1;
    case DType::kQ4_0:
      return 2;
    case DType::kQ4_1:
      return 3;
    case DType::kQ8_0:
      return 7;
    case DType::kQ5_0:
      return 8;
    case DType::kQ5_1:
      return 9;
    case DType::kQ2_K:
      return 10;
    case DType::kQ3_K:
      return 11;
    case DType::kQ4_K:
      return 14;
    case DType::kQ5_K:
      return 16;
    case DType::kQ6_K:
      return 18;
    case DType::kBF16:
      return 32;
    case DType::kQ8_K:
      break;
  }
  return 0;
}

std::string quantize_temporary_path(const std::string& out_path) {
  return out_path + ".f32.tmp.gguf";
}

Result<QuantizeSummary> quantize_model(const std::string& in_path, const std::string& out_path,
                                       const QuantScheme& scheme, ThreadPool& pool, const QuantizeProgress& progress) {
  std::string gguf_path = in_path;
  std::string temp;
  QuantizeSummary summary;
  std::error_code ec;
  if (std::filesystem::is_directory(in_path, ec)) {
    temp = quantize_temporary_path(out_path);
    ConvertOptions co;
    co.dtype = DType::kF32;
    TESSERA_ASSIGN_OR_RETURN(ConvertSummary cs, convert_hf_to_gguf(in_path, temp, co));
    for (std::string& n : cs.notes) summary.notes.push_back(std::move(n));
    gguf_path = temp;
  }
  struct TempRemover {
    std::string path;
    ~TempRemover() {
      std::error_code e;
      if (!path.empty()) std::filesystem::remove(path, e);
    }
  } remover{temp};

  TESSERA_ASSIGN_OR_RETURN(GgufFile in, GgufFile::open(gguf_path));
  // The mapping keeps the temporary's data: drop its name now, so that a
  // killed run leaves nothing of it behind from here on.
  if (!temp.empty()) std::filesystem::remove(temp, ec);
  const std::string in_name = temp.empty() ? in.name() : in_path;  // errors name the user's input
  int n_layers = 0;
  for (const GgufTensorInfo& t : in.tensors()) n_layers = std::max(n_layers, layer_of(t.name) + 1);
  const bool has_output = in.find_tensor(tensor_name_entry(TensorRole::kOutput).gguf) != nullptr;

  GgufWriter w;
  for (const GgufKeyValue& kv : in.metadata()) w.add_value(kv.key, kv.value);
  w.add_uint32("general.file_type", quant_scheme_file_type(scheme));
  if (dtype_is_quantized(scheme.base)) w.add_uint32("general.quantization_version", 2);

  const int n = static_cast<int>(in.tensors().size());
  int done = 0;
  for (const GgufTensorInfo& t : in.tensors()) {
    if (!t.dtype) {
      return unimplemented(in_name + ": tensor '" + t.name + "' has type " + ggml_type_name(t.ggml_type) +
                           ", which tessera cannot read");
    }
    summary.bytes_in += t.n_bytes;
    const int64_t cols = t.shape.empty() ? 1 : t.shape[0];
    const int64_t rows = cols > 0 ? t.n_elements / cols : 0;
    DType out_t = DType::kF32;  // 1-D tensors (norms, biases) stay f32
    if (t.shape.size() >= 2) {
      const DType want = quant_scheme_tensor_type(scheme, t.name, n_layers, has_output);
      out_t = quant_fallback_type(want, cols);
      if (out_t != want) summary.notes.push_back(quant_fallback_note(t.name, cols, want, out_t));
      ++summary.n_quantized;
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(rows) * dtype_row_bytes(out_t, cols));
    std::mutex bad_mu;
    std::optional<BadRow> bad;  // the first bad row of any thread's range
    pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      if (auto b = requantize_rows(t, out_t, cols, r0, r1, bytes.data())) {
        std::lock_guard<std::mutex> lock(bad_mu);
        if (!bad || b->row < bad->row) bad = std::move(b);
      }
    });
    if (bad) {
      return invalid_argument(in_name + ": tensor '" + t.name + "' row " + std::to_string(bad->row) + " " + bad->why +
                              "; refusing to write " + out_path);
    }
    summary.bytes_out += bytes.size();
    w.add_tensor(t.name, t.shape, out_t, std::move(bytes));
    ++summary.n_tensors;
    if (progress) progress(++done, n, t.name);
  }
  TESSERA_RETURN_IF_ERROR(w.write(out_path));
  return summary;
}

std::optional<QuantScheme> load_quant_scheme_from_name(std::string_view name) {
  std::optional<QuantScheme> s = quant_scheme_from_name(name);
  if (!s || s->mix != QuantMix::kNone) return s;
  switch (s->base) {
    case DType::kQ8_0:
    case DType::kQ5_1:
    case DType::kQ5_0:
    case DType::kQ4_1:
    case DType::kQ4_0:
    case DType::kQ6_K:
    case DType::kQ5_K:
    case DType::kQ4_K:
    case DType::kQ3_K:
    case DType::kQ2_K:
      return s;
    default:
      return std::nullopt;
  }
}

std::vector<std::string> load_quant_scheme_names() {
  std::vector<std::string> names = quant_scheme_names();
  std::erase_if(names, [](const std::string& n) { return !load_quant_scheme_from_name(n); });
  return names;
}

QuantizedWeights quantize_weights(ModelWeights& weights, const QuantScheme& scheme) {
  QuantizedWeights q;
  std::vector<std::vector<uint8_t>>& storage = q.storage;
  ThreadPool pool(cpu_features().physical_cores);
  const int n_layers = static_cast<int>(weights.layers.size());
  auto quantize = [&](WeightView& m, std::string_view name) {
    ++q.n_considered;
    const DType t = quant_scheme_tensor_type(scheme, name, n_layers, true);
    if (m.dtype == t || m.cols % dtype_block_elems(t) != 0) return;
    std::vector<uint8_t> out(static_cast<size_t>(m.rows) * dtype_row_bytes(t, m.cols));  // [rows, row bytes]
    const size_t in_row = dtype_row_bytes(m.dtype, m.cols), out_row = dtype_row_bytes(t, m.cols);
    const auto* src = static_cast<const uint8_t*>(m.data);
    pool.parallel_for(m.rows, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(m.cols));  // [cols]
      for (int64_t r = r0; r < r1; ++r) {
        dequantize_row(m.dtype, src + static_cast<size_t>(r) * in_row, row.data(), m.cols);
        quantize_row(t, row.data(), out.data() + static_cast<size_t>(r) * out_row, m.cols);
      }
    });
    m = WeightView{t, out.data(), m.rows, m.cols};
    storage.push_back(std::move(out));  // the heap buffer does not move
  };
  quantize(weights.output, gguf_tensor_name(TensorRole::kOutput));
  for (int l = 0; l < n_layers; ++l) {
    LayerWeights& w = weights.layers[static_cast<size_t>(l)];
    const std::pair<WeightView*, TensorRole> views[] = {
        {&w.wq, TensorRole::kAttnQ},      {&w.wk, TensorRole::kAttnK},       {&w.wv, TensorRole::kAttnV},
        {&w.wo, TensorRole::kAttnOutput}, {&w.w_gate, TensorRole::kFfnGate}, {&w.w_up, TensorRole::kFfnUp},
        {&w.w_down, TensorRole::kFfnDown}};
    for (const auto& [view, role] : views) quantize(*view, gguf_tensor_name(role, l));
  }
  return q;
}

}  // namespace tessera
