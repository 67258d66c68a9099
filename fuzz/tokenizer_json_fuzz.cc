// libFuzzer target for Hugging Face tokenizer files (untrusted input from
// model folders). The input is a tokenizer.json text, optionally followed by a
// NUL byte and a tokenizer_config.json text, optionally followed by another
// NUL byte and a text to encode (else a fixed text with special-token
// spellings). Must hold: parse_hf_tokenizer returns a Status whose message
// starts with the file name, never throws, crashes or reads out of bounds; on
// success, encoding the text with and without special tokens gives ids inside
// the vocabulary; without parse_special no control token but <unk> comes out
// of the text (issue #17: untrusted text never becomes control tokens), and add_special
// adds exactly the BOS/EOS the tokenizer says it adds; decode and
// token_to_piece of every id return.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf_tokenizer_json.h"

namespace {

// The text between the `k`-th and the next NUL (npos: absent).
std::string_view field(std::string_view in, int k, bool& present) {
  size_t begin = 0;
  for (int i = 0; i < k; ++i) {
    const size_t nul = in.find('\0', begin);
    if (nul == std::string_view::npos) {
      present = false;
      return {};
    }
    begin = nul + 1;
  }
  present = true;
  const size_t end = in.find('\0', begin);
  return in.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

// A control token other than the unknown token (which stands for text the
// vocabulary cannot spell, and may be a special added token).
bool has_control(const tessera::Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (const int32_t id : ids) {
    if (id != tok.unk_id() && tok.token_type(id) == tessera::TokenType::kControl) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  bool has_config = false;
  bool has_text = false;
  const std::string_view json = field(in, 0, has_config);
  const std::string_view config = field(in, 1, has_config);
  std::string_view text = field(in, 2, has_text);
  if (!has_text) text = "Hello <s> </s> <|endoftext|> <|im_start|>user\n\xC3\xA9 12 345 \xF0\x9F\x98\x80";

  auto r = tessera::parse_hf_tokenizer(json, config, "fuzz.json");
  if (!r.ok()) {
    if (r.status().message().rfind("fuzz.json", 0) != 0) std::abort();
    return 0;
  }
  const tessera::BpeTokenizer& tok = **r;
  const int32_t n = tok.n_vocab();
  if (n <= 0) std::abort();
  for (const bool parse_special : {false, true}) {
    const std::vector<int32_t> plain = tok.encode(text, /*add_special=*/false, parse_special);
    const std::vector<int32_t> framed = tok.encode(text, /*add_special=*/true, parse_special);
    for (const std::vector<int32_t>* ids : {&plain, &framed}) {
      for (const int32_t id : *ids) {
        if (id < 0 || id >= n) std::abort();
        (void)tok.token_to_piece(id);
      }
      (void)tok.decode(*ids);
    }
    if (!parse_special && has_control(tok, plain)) std::abort();
    // add_special frames the same ids with the BOS / EOS the tokenizer adds.
    const size_t bos = tok.add_bos() ? 1 : 0;
    const size_t eos = tok.add_eos() ? 1 : 0;
    if (framed.size() != plain.size() + bos + eos) std::abort();
    if (bos == 1 && framed.front() != tok.bos_id()) std::abort();
    if (eos == 1 && framed.back() != tok.eos_id()) std::abort();
    if (!std::equal(plain.begin(), plain.end(), framed.begin() + static_cast<std::ptrdiff_t>(bos))) std::abort();
  }
  return 0;
}
