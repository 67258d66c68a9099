#include "tokenizer/incremental_detokenizer.h"

#include "tokenizer/utf8.h"

namespace tessera {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool strip_leading_space)
    : tokenizer_(tokenizer), strip_pending_(strip_leading_space && tokenizer.strips_leading_space()) {}

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string piece = tokenizer_.token_to_piece(id);
  if (piece.empty()) return {};
  if (strip_pending_) {
    strip_pending_ = false;
    if (piece[0] == ' ') piece.erase(0, 1);
  }
  pending_.append(piece);
  return drain(/*at_end=*/false);
}

std::string IncrementalDetokenizer::flush() { return drain(/*at_end=*/true); }

std::string IncrementalDetokenizer::drain(bool at_end) {
  std::string out;
  out.reserve(pending_.size());
  const std::string_view s = pending_;
  size_t pos = 0;
  while (pos < s.size()) {
    const utf8::ScanResult r = utf8::scan(s.substr(pos));
    if (r.kind == utf8::Scan::kValid) {
      out.append(s.substr(pos, r.length));
      pos += r.length;
    } else if (r.kind == utf8::Scan::kInvalid) {
      out.append(utf8::kReplacement);
      pos += r.length;
    } else {  // incomplete: runs to the end of the buffer
      if (!at_end) break;
      out.append(utf8::kReplacement);
      pos = s.size();
    }
  }
  pending_.erase(0, pos);
  return out;
}

}  // namespace tessera
