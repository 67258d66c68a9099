#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/check.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/utf8.h"

namespace tessera {

const char* const kGpt2SplitPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Split patterns (data, from the models' tokenizer.json files).
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM: cased letters (Lu/Ll/Lt as of the model's Unicode version) with an optional leading space.
constexpr const char* kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
    R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
    R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
    R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
    R"(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
    R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
constexpr const char* kDeepseekPunct = R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
constexpr const char* kDeepseekCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

std::shared_ptr<const SplitRegex> must_compile(std::string_view pattern) {
  Result<std::shared_ptr<const SplitRegex>> re = SplitRegex::compile(pattern);
  if (!re.ok()) {
    std::fprintf(stderr, "%s\n", re.status().to_string().c_str());
    TESSERA_CHECK(re.ok());
  }
  return *re;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

void unicode_normalize(std::string& s, int options) {
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                          static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n >= 0 && dst != nullptr) s.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
}

void lowercase(std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  size_t pos = 0;
  while (pos < s.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len =
        utf8proc_iterate(p + pos, static_cast<utf8proc_ssize_t>(s.size() - pos), &cp);
    if (len <= 0) {  // ill-formed byte: copy
      out.push_back(s[pos++]);
      continue;
    }
    std::array<utf8proc_uint8_t, 4> buf{};
    const utf8proc_ssize_t w = utf8proc_encode_char(utf8proc_tolower(cp), buf.data());
    out.append(reinterpret_cast<const char*>(buf.data()), static_cast<size_t>(w));
    pos += static_cast<size_t>(len);
  }
  s = std::move(out);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Cuts `piece` at `matches` per `behavior`, appending the views to `out`.
// Segments (gaps and matches, in order) are streamed through a pending
// piece that later segments may extend.
class SplitEmitter {
 public:
  SplitEmitter(std::string_view piece, SplitBehavior behavior, std::vector<std::string_view>& out)
      : piece_(piece), behavior_(behavior), out_(out) {}

  void segment(size_t begin, size_t end, bool match) {
    if (end <= begin) return;
    switch (behavior_) {
      case SplitBehavior::kRemoved:
        if (!match) out_.push_back(piece_.substr(begin, end - begin));
        return;
      case SplitBehavior::kIsolated:
        out_.push_back(piece_.substr(begin, end - begin));
        return;
      case SplitBehavior::kContiguous:
        if (match && has_pending_ && last_match_) {
          end_ = end;
          return;
        }
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (match && !last_match_ && has_pending_) {
          end_ = end;
          last_match_ = match;
          return;
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (!match && last_match_ && has_pending_) {
          end_ = end;
          last_match_ = match;
          return;
        }
        break;
    }
    flush();
    has_pending_ = true;
    begin_ = begin;
    end_ = end;
    last_match_ = match;
  }

  void flush() {
    if (has_pending_) out_.push_back(piece_.substr(begin_, end_ - begin_));
    has_pending_ = false;
  }

 private:
  std::string_view piece_;
  SplitBehavior behavior_;
  std::vector<std::string_view>& out_;
  bool has_pending_ = false;
  bool last_match_ = false;  // whether the last segment seen was a delimiter
  size_t begin_ = 0;
  size_t end_ = 0;
};

void apply_split(std::string_view piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<std::string_view>& out) {
  if (matches.empty() && !invert && behavior != SplitBehavior::kRemoved) {
    out.push_back(piece);
    return;
  }
  SplitEmitter emit(piece, behavior, out);
  size_t pos = 0;
  for (const auto& [b, e] : matches) {
    emit.segment(pos, b, invert);
    emit.segment(b, e, !invert);
    pos = e;
  }
  emit.segment(pos, piece.size(), invert);
  emit.flush();
}

}  // namespace

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::kReplace:
        replace_all(s, step.pattern, step.content);
        break;
      case NormalizerStep::Kind::kReplaceRegex: {
        std::vector<std::pair<size_t, size_t>> matches;
        step.regex->find_all(s, matches);
        if (matches.empty()) break;
        std::string out;
        size_t pos = 0;
        for (const auto& [b, e] : matches) {
          out.append(s, pos, b - pos);
          out.append(step.content);
          pos = e;
        }
        out.append(s, pos, std::string::npos);
        s = std::move(out);
        break;
      }
      case NormalizerStep::Kind::kPrepend:
        if (!s.empty()) s.insert(0, step.content);
        break;
      case NormalizerStep::Kind::kNfc:
        unicode_normalize(s, UTF8PROC_COMPOSE);
        break;
      case NormalizerStep::Kind::kNfd:
        unicode_normalize(s, UTF8PROC_DECOMPOSE);
        break;
      case NormalizerStep::Kind::kNfkc:
        unicode_normalize(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
        break;
      case NormalizerStep::Kind::kNfkd:
        unicode_normalize(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
        break;
      case NormalizerStep::Kind::kLowercase:
        lowercase(s);
        break;
      case NormalizerStep::Kind::kStrip: {
        size_t b = 0, e = s.size();
        if (step.left) {
          while (b < e && is_space(s[b])) ++b;
        }
        if (step.right) {
          while (e > b && is_space(s[e - 1])) --e;
        }
        s = s.substr(b, e - b);
        break;
      }
    }
  }
  return s;
}

bool PreTokenizer::byte_level() const {
  for (const PreTokenizerStep& s : steps_) {
    if (s.kind == PreTokenizerStep::Kind::kByteLevel) return true;
  }
  return false;
}

PreTokenizerStep PreTokenizer::split(std::string_view pattern, SplitBehavior behavior, bool invert) {
  PreTokenizerStep s;
  s.kind = PreTokenizerStep::Kind::kSplit;
  s.regex = must_compile(pattern);
  s.behavior = behavior;
  s.invert = invert;
  return s;
}

PreTokenizerStep PreTokenizer::byte_level(bool add_prefix_space, bool use_regex) {
  PreTokenizerStep s;
  s.kind = PreTokenizerStep::Kind::kByteLevel;
  s.add_prefix_space = add_prefix_space;
  if (use_regex) s.regex = must_compile(kGpt2SplitPattern);
  return s;
}

PreTokenizerStep PreTokenizer::digits(bool individual) {
  return split(R"(\p{N})", individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
}

PreTokenizerStep PreTokenizer::punctuation(SplitBehavior behavior) {
  return split(R"([\p{P}!-/:-@\[-`{-~])", behavior);
}

void PreTokenizer::run(std::string_view text, bool at_text_start, Pieces& out) const {
  out.clear();
  if (text.empty()) return;
  out.views.push_back(text);
  std::vector<std::string_view> next;
  std::vector<std::pair<size_t, size_t>> matches;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const PreTokenizerStep& step = steps_[k];
    const bool last = k + 1 == steps_.size();
    next.clear();
    next.reserve(out.views.size());
    switch (step.kind) {
      case PreTokenizerStep::Kind::kSplit:
        for (std::string_view piece : out.views) {
          matches.clear();
          step.regex->find_all(piece, matches);
          apply_split(piece, matches, step.behavior, step.invert, next);
        }
        break;
      case PreTokenizerStep::Kind::kByteLevel: {
        for (std::string_view piece : out.views) {
          if (step.add_prefix_space && piece[0] != ' ') {
            out.arena.push_back(std::string(" ").append(piece));
            piece = out.arena.back();
          }
          const size_t first = next.size();
          if (step.regex != nullptr) {
            matches.clear();
            step.regex->find_all(piece, matches);
            apply_split(piece, matches, SplitBehavior::kIsolated, false, next);
          } else {
            next.push_back(piece);
          }
          if (!last) {
            for (size_t i = first; i < next.size(); ++i) {
              out.arena.push_back(byte_unicode::encode(next[i]));
              next[i] = out.arena.back();
            }
          }
        }
        out.raw_bytes = last;
        break;
      }
      case PreTokenizerStep::Kind::kMetaspace: {
        bool first_piece = true;
        for (std::string_view piece : out.views) {
          std::string s(piece);
          replace_all(s, " ", step.replacement);
          const bool prepend = step.prepend_scheme == PrependScheme::kAlways ||
                               (step.prepend_scheme == PrependScheme::kFirst && at_text_start && first_piece);
          if (prepend && s.compare(0, step.replacement.size(), step.replacement) != 0) s.insert(0, step.replacement);
          first_piece = false;
          out.arena.push_back(std::move(s));
          const std::string_view view = out.arena.back();
          if (!step.split) {
            next.push_back(view);
            continue;
          }
          // Split before each replacement (HF: MergedWithNext on the replacement).
          size_t start = 0;
          size_t pos = view.find(step.replacement, 1);
          while (pos != std::string_view::npos) {
            next.push_back(view.substr(start, pos - start));
            start = pos;
            pos = view.find(step.replacement, pos + step.replacement.size());
          }
          next.push_back(view.substr(start));
        }
        break;
      }
    }
    out.views.swap(next);
  }
}

Result<GgufPreset> gguf_preset(std::string_view pre) {
  GgufPreset p;
  if (pre.empty() || pre == "default" || pre == "gpt-2" || pre == "gpt2" || pre == "mpt" || pre == "olmo" ||
      pre == "jais") {
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, true));
  } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
             pre == "smaug-bpe") {
    p.pre_tokenizer.add(PreTokenizer::split(kLlama3Pattern));
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, false));
    p.add_bos = true;
    p.ignore_merges = true;
  } else if (pre == "qwen2" || pre == "stablelm2") {
    p.pre_tokenizer.add(PreTokenizer::split(kQwen2Pattern));
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, false));
  } else if (pre == "deepseek-llm") {
    for (const char* pattern : {R"([\r\n])", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk,
                                R"(\p{N}+)"}) {
      p.pre_tokenizer.add(PreTokenizer::split(pattern));
    }
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, false));
  } else if (pre == "deepseek-coder") {
    for (const char* pattern : {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk}) {
      p.pre_tokenizer.add(PreTokenizer::split(pattern));
    }
    p.pre_tokenizer.add(PreTokenizer::digits(true));
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, false));
  } else if (pre == "falcon") {
    p.pre_tokenizer.add(PreTokenizer::punctuation(SplitBehavior::kContiguous));
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, true));
    p.pre_tokenizer.add(PreTokenizer::digits(false));
    p.pre_tokenizer.add(PreTokenizer::split("[0-9][0-9][0-9]"));
  } else if (pre == "starcoder" || pre == "refact" || pre == "command-r") {
    p.pre_tokenizer.add(PreTokenizer::digits(true));
    p.pre_tokenizer.add(PreTokenizer::byte_level(false, true));
  } else {
    return unimplemented(fmt::format(
        "tokenizer.ggml.pre = \"{}\" is not a known pre-tokenizer (known: default, gpt-2, mpt, olmo, jais, "
        "llama3, llama-bpe, falcon3, smaug-bpe, qwen2, stablelm2, deepseek-llm, deepseek-coder, falcon, "
        "starcoder, refact, command-r)",
        pre));
  }
  return p;
}

}  // namespace tessera
