#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <array>
#include <optional>
#include <utility>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"

namespace tessera {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kChatTemplateKey = "tokenizer.chat_template";

// Reads an optional token id: `fallback` when absent (kept only if in range),
// -1 when stored as -1 (or as uint32 0xFFFFFFFF, which llama.cpp's converters
// write for "none", e.g. stories260K's padding id), an error naming the key when out of range.
Result<int32_t> read_token_id(const GgufFile& gguf, std::string_view key, int32_t fallback,
                              int32_t n_vocab) {
  if (gguf.find(key) == nullptr) return fallback >= 0 && fallback < n_vocab ? fallback : -1;
  TESSERA_ASSIGN_OR_RETURN(const int64_t id, gguf.get_int(key));
  if (id == -1 || id == int64_t{UINT32_MAX}) return -1;
  if (id < 0 || id >= n_vocab) {
    return data_loss(fmt::format("{}: {} = {} is outside the vocabulary [0, {})", gguf.name(), key,
                                 id, n_vocab));
  }
  return static_cast<int32_t>(id);
}

Result<bool> read_flag(const GgufFile& gguf, std::string_view key, bool fallback) {
  if (gguf.find(key) == nullptr) return fallback;
  return gguf.get_bool(key);
}

}  // namespace

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
  for (int32_t id : {vocab_.eos_id, vocab_.eot_id, vocab_.eom_id}) {
    if (in_range(id)) eog_ids_.push_back(id);
  }
  static constexpr std::array<std::string_view, 6> kEndMarkers = {
      "<|eot_id|>", "<|end|>", "<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eom_id|>"};
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (vocab_.types[static_cast<size_t>(id)] != TokenType::kControl) continue;
    const std::string& text = vocab_.tokens[static_cast<size_t>(id)];
    if (std::find(kEndMarkers.begin(), kEndMarkers.end(), text) != kEndMarkers.end()) {
      eog_ids_.push_back(id);
    }
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
  control_tokens_ = SpecialTokenMatcher(vocab_, /*control=*/true, /*user_defined=*/false);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const TextRange all{0, text.size()};
  return encode(text, add_special, parse_special ? std::span<const TextRange>(&all, 1) : std::span<const TextRange>());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       std::span<const TextRange> special_ranges) const {
  if (special_ranges.empty() || control_tokens_.empty()) return encode(text, add_special);
  std::vector<SpecialTokenMatcher::Fragment> fragments;
  control_tokens_.split(text, special_ranges, fragments);
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  for (const SpecialTokenMatcher::Fragment& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
    } else {
      const std::vector<int32_t> ids = encode(f.text, /*add_special=*/false);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  }
  if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return in_range(id) ? vocab_.tokens[static_cast<size_t>(id)] : kEmpty;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return in_range(id) ? vocab_.types[static_cast<size_t>(id)] : TokenType::kUndefined;
}

float Tokenizer::token_score(int32_t id) const {
  return in_range(id) ? vocab_.scores[static_cast<size_t>(id)] : 0.0f;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& gguf) {
  if (gguf.find(kModelKey) == nullptr) {
    return not_found(fmt::format("{}: no tokenizer: metadata key {} is missing", gguf.name(), kModelKey));
  }
  TESSERA_ASSIGN_OR_RETURN(std::string model, gguf.get_string(kModelKey));
  if (model != "llama" && model != "gpt2") {
    if (model == "no" || model == "none") {
      return unimplemented(fmt::format("{}: {} = \"{}\": models without a vocabulary are not supported",
                                       gguf.name(), kModelKey, model));
    }
    return unimplemented(fmt::format("{}: {} tokenizers are not supported ({} = \"{}\")", gguf.name(), model,
                                     kModelKey, model));
  }
  const bool bpe = model == "gpt2";

  Vocabulary vocab;
  vocab.model = model;
  if (gguf.find(kTokensKey) == nullptr) {
    return not_found(fmt::format("{}: metadata key {} is missing", gguf.name(), kTokensKey));
  }
  TESSERA_ASSIGN_OR_RETURN(vocab.tokens, gguf.get_string_array(kTokensKey));
  const size_t n = vocab.tokens.size();
  if (n == 0) return data_loss(fmt::format("{}: {} is empty", gguf.name(), kTokensKey));
  if (n > static_cast<size_t>(INT32_MAX)) {
    return data_loss(fmt::format("{}: {} has {} entries, too many", gguf.name(), kTokensKey, n));
  }
  const auto n_vocab = static_cast<int32_t>(n);

  if (gguf.find(kScoresKey) != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(const std::vector<double> scores, gguf.get_float_array(kScoresKey));
    if (scores.size() != n) {
      return data_loss(fmt::format("{}: {} has {} entries but {} has {}", gguf.name(), kScoresKey,
                                   scores.size(), kTokensKey, n));
    }
    vocab.scores.assign(scores.begin(), scores.end());
  } else {
    vocab.scores.assign(n, 0.0f);
  }

  if (gguf.find(kTypesKey) != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> types, gguf.get_int_array(kTypesKey));
    if (types.size() != n) {
      return data_loss(fmt::format("{}: {} has {} entries but {} has {}", gguf.name(), kTypesKey,
                                   types.size(), kTokensKey, n));
    }
    vocab.types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > 6) {
        return data_loss(fmt::format("{}: {}[{}] = {} is not a token type (0..6)", gguf.name(),
                                     kTypesKey, i, types[i]));
      }
      vocab.types[i] = static_cast<TokenType>(types[i]);
      if (vocab.types[i] == TokenType::kByte && parse_byte_token(vocab.tokens[i]) < 0) {
        return data_loss(fmt::format("{}: {}[{}] is a byte token but {}[{}] = \"{}\" is not <0xNN>",
                                     gguf.name(), kTypesKey, i, kTokensKey, i, vocab.tokens[i]));
      }
    }
  } else {
    vocab.types.assign(n, TokenType::kNormal);
  }

  // SentencePiece vocabularies default to <unk>=0, <s>=1, </s>=2; BPE ones have no defaults.
  TESSERA_ASSIGN_OR_RETURN(vocab.bos_id,
                           read_token_id(gguf, "tokenizer.ggml.bos_token_id", bpe ? -1 : 1, n_vocab));
  TESSERA_ASSIGN_OR_RETURN(vocab.eos_id,
                           read_token_id(gguf, "tokenizer.ggml.eos_token_id", bpe ? -1 : 2, n_vocab));
  TESSERA_ASSIGN_OR_RETURN(vocab.eot_id, read_token_id(gguf, "tokenizer.ggml.eot_token_id", -1, n_vocab));
  TESSERA_ASSIGN_OR_RETURN(vocab.eom_id, read_token_id(gguf, "tokenizer.ggml.eom_token_id", -1, n_vocab));
  TESSERA_ASSIGN_OR_RETURN(vocab.unk_id,
                           read_token_id(gguf, "tokenizer.ggml.unknown_token_id", bpe ? -1 : 0, n_vocab));
  TESSERA_ASSIGN_OR_RETURN(vocab.pad_id,
                           read_token_id(gguf, "tokenizer.ggml.padding_token_id", -1, n_vocab));
  if (gguf.find(kChatTemplateKey) != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(vocab.chat_template, gguf.get_string(kChatTemplateKey));
  }
  TESSERA_ASSIGN_OR_RETURN(vocab.add_eos, read_flag(gguf, "tokenizer.ggml.add_eos_token", false));

  if (!bpe) {
    TESSERA_ASSIGN_OR_RETURN(vocab.add_bos, read_flag(gguf, "tokenizer.ggml.add_bos_token", true));
    TESSERA_ASSIGN_OR_RETURN(vocab.add_space_prefix,
                             read_flag(gguf, "tokenizer.ggml.add_space_prefix", true));
    return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(vocab)));
  }

  if (gguf.find(kPreKey) != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(vocab.pre, gguf.get_string(kPreKey));
  }
  Result<GgufPreset> preset = gguf_preset(vocab.pre);
  if (!preset.ok()) return unimplemented(fmt::format("{}: {}", gguf.name(), preset.status().message()));
  TESSERA_ASSIGN_OR_RETURN(vocab.add_bos, read_flag(gguf, "tokenizer.ggml.add_bos_token", preset->add_bos));
  TESSERA_ASSIGN_OR_RETURN(vocab.add_space_prefix, read_flag(gguf, "tokenizer.ggml.add_space_prefix", false));

  if (gguf.find(kMergesKey) == nullptr) {
    return not_found(fmt::format("{}: metadata key {} is missing (required for gpt2 vocabularies)", gguf.name(),
                                 kMergesKey));
  }
  TESSERA_ASSIGN_OR_RETURN(const std::vector<std::string> merges, gguf.get_string_array(kMergesKey));
  BpeConfig config;
  config.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= m.size()) {
      return data_loss(fmt::format("{}: {}[{}] = \"{}\" is not \"left right\"", gguf.name(), kMergesKey, i, m));
    }
    config.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  config.pre_tokenizer = std::move(preset->pre_tokenizer);
  config.ignore_merges = preset->ignore_merges;
  config.decode_byte_level = true;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tok, BpeTokenizer::create(std::move(vocab), std::move(config)));
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_json(const std::string& tokenizer_json_path,
                                                           const std::string& tokenizer_config_json_path) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> tok,
                           load_hf_tokenizer(tokenizer_json_path, tokenizer_config_json_path));
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_dir(const std::string& dir) {
  const std::string config = dir + "/tokenizer_config.json";
  std::error_code ec;
  const bool has_config = std::filesystem::is_regular_file(config, ec);
  return from_hf_json(dir + "/tokenizer.json", has_config ? config : std::string());
}

}  // namespace tessera
