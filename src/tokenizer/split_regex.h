// SplitRegex: a compiled pre-tokenizer split pattern. PCRE2 (pcre.org) in
// UTF mode with Unicode properties (PCRE2_UTF | PCRE2_UCP, so \s, \w, \d and
// \p{..} follow Unicode), JIT-compiled when PCRE2 has JIT support. Subjects
// may contain ill-formed UTF-8 (PCRE2_MATCH_INVALID_UTF): ill-formed bytes
// never match, so they end up in the text between matches.
//
// `$` matches only at the very end of the subject (PCRE2_DOLLAR_ENDONLY),
// not before a final newline.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/status.h"

namespace tessera {

class SplitRegex {
 public:
  // Compiles `pattern` (UTF-8, PCRE2 syntax). kInvalidArgument with PCRE2's
  // message and the offset on a syntax error.
  static Result<std::shared_ptr<const SplitRegex>> compile(std::string_view pattern);

  ~SplitRegex();
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  // Appends the non-empty, non-overlapping matches of the pattern in
  // `subject`, scanning left to right (as Python's re.finditer / Rust's
  // find_iter, empty matches skipped), as [begin, end) byte offsets.
  // Thread-safe. A match error (resource limits) ends the scan early, so
  // the rest of the subject counts as unmatched text.
  void find_all(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  SplitRegex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace tessera
