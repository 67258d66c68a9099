#include "tokenizer/hf_tokenizer_json.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/spm_tokenizer.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// Ids beyond this are treated as corrupt (avoids huge allocations).
constexpr int64_t kMaxVocab = int64_t{1} << 24;

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("{}: cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parse state: names the file in errors.
struct Ctx {
  const std::string& name;
  Status bad(std::string_view what) const { return data_loss(fmt::format("{}: {}", name, what)); }
  Status unsupported(std::string_view what) const { return unimplemented(fmt::format("{}: {}", name, what)); }
};

bool get_bool(const Json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string get_string(const Json& j, const char* key, std::string fallback = {}) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string type_of(const Json& j) { return j.is_object() ? get_string(j, "type") : std::string(); }

// A PCRE2 pattern matching `literal` exactly.
std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// {"String": s} or {"Regex": r} -> a regex pattern.
Result<std::string> pattern_of(const Json& j, const Ctx& ctx, std::string_view where) {
  if (j.is_object()) {
    if (j.contains("String") && j["String"].is_string()) return escape_regex(j["String"].get<std::string>());
    if (j.contains("Regex") && j["Regex"].is_string()) return j["Regex"].get<std::string>();
  }
  return ctx.bad(fmt::format("{}: pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}", where));
}

Result<std::shared_ptr<const SplitRegex>> compile(const std::string& pattern, const Ctx& ctx) {
  Result<std::shared_ptr<const SplitRegex>> re = SplitRegex::compile(pattern);
  if (!re.ok()) return ctx.bad(re.status().message());
  return re;
}

Result<SplitBehavior> behavior_of(const Json& j, const Ctx& ctx) {
  const std::string b = get_string(j, "behavior", "Isolated");
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  return ctx.bad(fmt::format("unknown split behavior \"{}\"", b));
}

Status add_normalizer(const Json& j, const Ctx& ctx, Normalizer& out) {
  if (j.is_null()) return {};
  const std::string type = type_of(j);
  NormalizerStep step;
  if (type == "Sequence") {
    const auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) return ctx.bad("normalizer Sequence without \"normalizers\"");
    for (const Json& n : *it) TESSERA_RETURN_IF_ERROR(add_normalizer(n, ctx, out));
    return {};
  }
  if (type == "Replace") {
    const Json& pattern = j.contains("pattern") ? j["pattern"] : Json();
    step.content = get_string(j, "content");
    if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      step.kind = NormalizerStep::Kind::kReplace;
      step.pattern = pattern["String"].get<std::string>();
    } else {
      TESSERA_ASSIGN_OR_RETURN(const std::string p, pattern_of(pattern, ctx, "normalizer Replace"));
      step.kind = NormalizerStep::Kind::kReplaceRegex;
      TESSERA_ASSIGN_OR_RETURN(step.regex, compile(p, ctx));
    }
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    step.content = get_string(j, "prepend");
  } else if (type == "NFC") {
    step.kind = NormalizerStep::Kind::kNfc;
  } else if (type == "NFD") {
    step.kind = NormalizerStep::Kind::kNfd;
  } else if (type == "NFKC") {
    step.kind = NormalizerStep::Kind::kNfkc;
  } else if (type == "NFKD") {
    step.kind = NormalizerStep::Kind::kNfkd;
  } else if (type == "Lowercase") {
    step.kind = NormalizerStep::Kind::kLowercase;
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.left = get_bool(j, "strip_left", true);
    step.right = get_bool(j, "strip_right", true);
  } else {
    return ctx.unsupported(fmt::format("normalizer \"{}\" is not supported", type));
  }
  out.add(std::move(step));
  return {};
}

Status add_pre_tokenizer(const Json& j, const Ctx& ctx, PreTokenizer& out) {
  if (j.is_null()) return {};
  const std::string type = type_of(j);
  if (type == "Sequence") {
    const auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) return ctx.bad("pre_tokenizer Sequence without \"pretokenizers\"");
    for (const Json& p : *it) TESSERA_RETURN_IF_ERROR(add_pre_tokenizer(p, ctx, out));
    return {};
  }
  if (type == "ByteLevel") {
    out.add(PreTokenizer::byte_level(get_bool(j, "add_prefix_space", false), get_bool(j, "use_regex", true)));
  } else if (type == "Split") {
    TESSERA_ASSIGN_OR_RETURN(const std::string pattern,
                             pattern_of(j.contains("pattern") ? j["pattern"] : Json(), ctx, "pre_tokenizer Split"));
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kSplit;
    TESSERA_ASSIGN_OR_RETURN(step.regex, compile(pattern, ctx));
    TESSERA_ASSIGN_OR_RETURN(step.behavior, behavior_of(j, ctx));
    step.invert = get_bool(j, "invert", false);
    out.add(std::move(step));
  } else if (type == "Digits") {
    out.add(PreTokenizer::digits(get_bool(j, "individual_digits", false)));
  } else if (type == "Punctuation") {
    TESSERA_ASSIGN_OR_RETURN(const SplitBehavior behavior, behavior_of(j, ctx));
    out.add(PreTokenizer::punctuation(behavior));
  } else if (type == "Whitespace") {
    out.add(PreTokenizer::split(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, /*invert=*/true));
  } else if (type == "WhitespaceSplit") {
    out.add(PreTokenizer::split(R"(\s+)", SplitBehavior::kRemoved));
  } else if (type == "Metaspace") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = get_string(j, "replacement", "\xE2\x96\x81");
    if (step.replacement.empty()) return ctx.bad("Metaspace with an empty replacement");
    const std::string scheme = get_string(j, "prepend_scheme");
    if (scheme == "always") {
      step.prepend_scheme = PrependScheme::kAlways;
    } else if (scheme == "first") {
      step.prepend_scheme = PrependScheme::kFirst;
    } else if (scheme == "never") {
      step.prepend_scheme = PrependScheme::kNever;
    } else if (scheme.empty()) {  // older files: add_prefix_space
      step.prepend_scheme = get_bool(j, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
    } else {
      return ctx.bad(fmt::format("unknown Metaspace prepend_scheme \"{}\"", scheme));
    }
    step.split = get_bool(j, "split", true);
    out.add(std::move(step));
  } else {
    return ctx.unsupported(fmt::format("pre_tokenizer \"{}\" is not supported", type));
  }
  return {};
}

Status add_decoder(const Json& j, const Ctx& ctx, BpeConfig& config, bool& byte_level) {
  if (j.is_null()) return {};
  const std::string type = type_of(j);
  if (type == "Sequence") {
    const auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) return ctx.bad("decoder Sequence without \"decoders\"");
    for (const Json& d : *it) TESSERA_RETURN_IF_ERROR(add_decoder(d, ctx, config, byte_level));
    return {};
  }
  if (type == "ByteLevel") {
    byte_level = true;
  } else if (type == "Replace") {
    const Json& pattern = j.contains("pattern") ? j["pattern"] : Json();
    if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string()) {
      return ctx.unsupported("decoder Replace with a Regex pattern is not supported");
    }
    config.decode_replacements.emplace_back(pattern["String"].get<std::string>(), get_string(j, "content"));
  } else if (type == "ByteFallback" || type == "Fuse") {
    // Byte tokens always decode to their byte; pieces are always concatenated.
  } else if (type == "Strip") {
    const auto start = j.contains("start") && j["start"].is_number_integer() ? j["start"].get<int64_t>() : 0;
    if (get_string(j, "content") == " " && start > 0) config.strip_leading_space = true;
  } else if (type == "Metaspace") {
    config.decode_replacements.emplace_back(get_string(j, "replacement", "\xE2\x96\x81"), " ");
    const std::string scheme = get_string(j, "prepend_scheme");
    config.strip_leading_space = scheme.empty() ? get_bool(j, "add_prefix_space", true) : scheme != "never";
  } else {
    return ctx.unsupported(fmt::format("decoder \"{}\" is not supported", type));
  }
  return {};
}

// A special-token field of tokenizer_config.json: "text", {"content": "text"} or null.
std::string token_field(const Json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return get_string(*it, "content");
  return {};
}

// BOS/EOS from a TemplateProcessing post-processor (possibly inside a Sequence).
void read_post_processor(const Json& j, const std::unordered_map<std::string, int32_t>& ids, Vocabulary& vocab) {
  if (!j.is_object()) return;
  const std::string type = type_of(j);
  if (type == "Sequence" && j.contains("processors") && j["processors"].is_array()) {
    for (const Json& p : j["processors"]) read_post_processor(p, ids, vocab);
    return;
  }
  if (type != "TemplateProcessing" || !j.contains("single") || !j["single"].is_array()) return;
  bool seen_sequence = false;
  for (const Json& item : j["single"]) {
    if (!item.is_object()) continue;
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken") || !item["SpecialToken"].is_object()) continue;
    const std::string name = get_string(item["SpecialToken"], "id");
    int32_t id = -1;
    const Json* specials = j.contains("special_tokens") ? &j["special_tokens"] : nullptr;
    if (specials != nullptr && specials->contains(name) && (*specials)[name].contains("ids") &&
        (*specials)[name]["ids"].is_array() && !(*specials)[name]["ids"].empty() &&
        (*specials)[name]["ids"][0].is_number_integer()) {
      id = (*specials)[name]["ids"][0].get<int32_t>();
    } else if (const auto it = ids.find(name); it != ids.end()) {
      id = it->second;
    }
    if (id < 0 || id >= static_cast<int32_t>(vocab.tokens.size())) continue;
    if (!seen_sequence) {
      vocab.bos_id = id;
      vocab.add_bos = true;
    } else {
      vocab.eos_id = id;
      vocab.add_eos = true;
    }
  }
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> parse_hf_tokenizer(std::string_view tokenizer_json, std::string_view config_json,
                                                         const std::string& name) {
  const Ctx ctx{name};
  const Json root = Json::parse(tokenizer_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return ctx.bad("not a JSON object");
  const auto model_it = root.find("model");
  if (model_it == root.end() || !model_it->is_object()) return ctx.bad("no \"model\" object");
  const Json& model = *model_it;
  const std::string model_type = type_of(model);
  if (model_type != "BPE" && !(model_type.empty() && model.contains("merges"))) {
    return ctx.unsupported(fmt::format("model type \"{}\" is not supported (only BPE)", model_type));
  }
  if (!get_string(model, "continuing_subword_prefix").empty() || !get_string(model, "end_of_word_suffix").empty()) {
    return ctx.unsupported("BPE continuing_subword_prefix / end_of_word_suffix are not supported");
  }

  // Vocabulary: model.vocab plus added_tokens.
  const auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object()) return ctx.bad("model has no \"vocab\" object");
  std::vector<std::pair<std::string, int64_t>> entries;
  entries.reserve(vocab_it->size());
  int64_t max_id = -1;
  for (const auto& [text, id] : vocab_it->items()) {
    if (!id.is_number_integer()) return ctx.bad(fmt::format("vocab entry \"{}\" has no integer id", text));
    const auto v = id.get<int64_t>();
    if (v < 0 || v >= kMaxVocab) return ctx.bad(fmt::format("vocab entry \"{}\" has id {} out of range", text, v));
    entries.emplace_back(text, v);
    max_id = std::max(max_id, v);
  }
  struct Added {
    std::string content;
    int64_t id;
    bool special;
  };
  std::vector<Added> added;
  if (const auto it = root.find("added_tokens"); it != root.end() && !it->is_null()) {
    if (!it->is_array()) return ctx.bad("\"added_tokens\" is not an array");
    for (const Json& a : *it) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string()) {
        return ctx.bad("an added token lacks an integer \"id\" or a string \"content\"");
      }
      const auto v = a["id"].get<int64_t>();
      if (v < 0 || v >= kMaxVocab) return ctx.bad(fmt::format("added token id {} out of range", v));
      added.push_back({a["content"].get<std::string>(), v, get_bool(a, "special", false)});
      max_id = std::max(max_id, v);
    }
  }
  if (max_id < 0) return ctx.bad("empty vocabulary");

  Vocabulary vocab;
  vocab.model = "hf-bpe";
  vocab.add_bos = false;
  vocab.add_eos = false;
  const auto n = static_cast<size_t>(max_id + 1);
  vocab.tokens.assign(n, std::string());
  vocab.scores.assign(n, 0.0f);
  vocab.types.assign(n, TokenType::kUnused);
  for (auto& [text, id] : entries) {
    vocab.tokens[static_cast<size_t>(id)] = std::move(text);
    vocab.types[static_cast<size_t>(id)] = TokenType::kNormal;
  }
  for (const Added& a : added) {
    vocab.tokens[static_cast<size_t>(a.id)] = a.content;
    vocab.types[static_cast<size_t>(a.id)] = a.special ? TokenType::kControl : TokenType::kUserDefined;
  }
  // Text -> id for resolving names (first id wins, added tokens included).
  std::unordered_map<std::string, int32_t> ids;
  for (size_t i = 0; i < n; ++i) {
    if (!vocab.tokens[i].empty()) ids.emplace(vocab.tokens[i], static_cast<int32_t>(i));
  }

  BpeConfig config;
  config.byte_fallback = get_bool(model, "byte_fallback", false);
  config.fuse_unk = get_bool(model, "fuse_unk", false);
  config.ignore_merges = get_bool(model, "ignore_merges", false);
  if (config.byte_fallback) {
    for (size_t i = 0; i < n; ++i) {
      if (vocab.types[i] == TokenType::kNormal && parse_byte_token(vocab.tokens[i]) >= 0) {
        vocab.types[i] = TokenType::kByte;
      }
    }
  }
  if (const std::string unk = get_string(model, "unk_token"); !unk.empty()) {
    const auto it = ids.find(unk);
    if (it == ids.end()) return ctx.bad(fmt::format("unk_token \"{}\" is not in the vocabulary", unk));
    vocab.unk_id = it->second;
    vocab.types[static_cast<size_t>(it->second)] = TokenType::kUnknown;
  }

  // Merges.
  if (const auto it = model.find("merges"); it != model.end() && !it->is_null()) {
    if (!it->is_array()) return ctx.bad("model \"merges\" is not an array");
    config.merges.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& m = (*it)[i];
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
        if (space == std::string::npos || space + 1 >= s.size()) {
          return ctx.bad(fmt::format("merge {} \"{}\" is not \"left right\"", i, s));
        }
        config.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        config.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return ctx.bad(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", i));
      }
    }
  }

  TESSERA_RETURN_IF_ERROR(add_normalizer(root.contains("normalizer") ? root["normalizer"] : Json(), ctx,
                                         config.normalizer));
  TESSERA_RETURN_IF_ERROR(add_pre_tokenizer(root.contains("pre_tokenizer") ? root["pre_tokenizer"] : Json(), ctx,
                                            config.pre_tokenizer));
  bool byte_level_decoder = false;
  const Json decoder = root.contains("decoder") ? root["decoder"] : Json();
  TESSERA_RETURN_IF_ERROR(add_decoder(decoder, ctx, config, byte_level_decoder));
  config.decode_byte_level = decoder.is_null() ? config.pre_tokenizer.byte_level() : byte_level_decoder;
  if (root.contains("post_processor")) read_post_processor(root["post_processor"], ids, vocab);

  if (!config_json.empty()) {
    const std::string cname = name + " (tokenizer_config.json)";
    const Json cfg = Json::parse(config_json, nullptr, /*allow_exceptions=*/false);
    if (cfg.is_discarded() || !cfg.is_object()) return data_loss(fmt::format("{}: not a JSON object", cname));
    auto resolve = [&](const char* key, int32_t& id) -> Status {
      const std::string text = token_field(cfg, key);
      if (text.empty()) return {};
      const auto it = ids.find(text);
      if (it == ids.end()) return data_loss(fmt::format("{}: {} \"{}\" is not in the vocabulary", cname, key, text));
      id = it->second;
      return {};
    };
    TESSERA_RETURN_IF_ERROR(resolve("bos_token", vocab.bos_id));
    TESSERA_RETURN_IF_ERROR(resolve("eos_token", vocab.eos_id));
    TESSERA_RETURN_IF_ERROR(resolve("unk_token", vocab.unk_id));
    TESSERA_RETURN_IF_ERROR(resolve("pad_token", vocab.pad_id));
    vocab.add_bos = get_bool(cfg, "add_bos_token", vocab.add_bos);
    vocab.add_eos = get_bool(cfg, "add_eos_token", vocab.add_eos);
    if (const auto it = cfg.find("chat_template"); it != cfg.end()) {
      if (it->is_string()) {
        vocab.chat_template = it->get<std::string>();
      } else if (it->is_array()) {
        for (const Json& t : *it) {
          if (!t.is_object() || !t.contains("template") || !t["template"].is_string()) continue;
          if (vocab.chat_template.empty() || get_string(t, "name") == "default") {
            vocab.chat_template = t["template"].get<std::string>();
          }
        }
      }
    }
  }
  if (vocab.add_bos && vocab.bos_id < 0) vocab.add_bos = false;
  if (vocab.add_eos && vocab.eos_id < 0) vocab.add_eos = false;
  vocab.add_space_prefix = config.strip_leading_space;
  return BpeTokenizer::create(std::move(vocab), std::move(config));
}

Result<std::unique_ptr<BpeTokenizer>> load_hf_tokenizer(const std::string& tokenizer_json_path,
                                                        const std::string& config_path) {
  TESSERA_ASSIGN_OR_RETURN(const std::string json, read_file(tokenizer_json_path));
  std::string config;
  if (!config_path.empty()) {
    TESSERA_ASSIGN_OR_RETURN(config, read_file(config_path));
  }
  return parse_hf_tokenizer(json, config, tokenizer_json_path);
}

}  // namespace tessera
