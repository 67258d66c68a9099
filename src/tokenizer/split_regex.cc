#include "tokenizer/split_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <array>

#include "tokenizer/utf8.h"

namespace tessera {

namespace {

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

Result<std::shared_ptr<const SplitRegex>> SplitRegex::compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                   &offset, nullptr);
  if (code == nullptr) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(error, message.data(), message.size());
    return invalid_argument(fmt::format("bad split regex \"{}\": {} at offset {}", pattern,
                                        reinterpret_cast<const char*>(message.data()), offset));
  }
  // JIT is an optimisation: when unavailable pcre2_match interprets.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<SplitRegex> re(new SplitRegex());
  re->pattern_ = std::string(pattern);
  re->code_ = code;
  return std::shared_ptr<const SplitRegex>(std::move(re));
}

SplitRegex::~SplitRegex() { pcre2_code_free(as_code(code_)); }

void SplitRegex::find_all(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const {
  if (subject.empty()) return;
  // One match-data block per thread and pattern size; reused across calls.
  thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(4, nullptr));
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  uint32_t flags = 0;
  while (start < subject.size()) {
    int rc = pcre2_match(as_code(code_), s, subject.size(), start, flags, data.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(as_code(code_), s, subject.size(), start, flags | PCRE2_NO_JIT, data.get(), nullptr);
    }
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) return;  // resource limit: rest is unmatched
    if (rc == PCRE2_ERROR_NOMATCH) return;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    const size_t b = ov[0];
    const size_t e = ov[1];
    if (e > b) {
      matches.emplace_back(b, e);
      start = e;
    } else {
      // Empty match: step over one character and search again.
      start = b + utf8::char_length(subject.substr(b));
    }
  }
}

}  // namespace tessera
