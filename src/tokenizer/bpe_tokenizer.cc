#include "tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/utf8.h"

namespace tessera {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string out;
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

}  // namespace

// Per-call working memory, reused across the pieces of one encode() call.
struct BpeTokenizer::Scratch {
  struct Symbol {
    int32_t id;       // token id; -1: an initial symbol that is not a token
    uint32_t offset;  // bytes of the piece
    uint32_t length;  // 0 once merged into the left neighbour
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol slots
    int32_t right;
    int32_t left_id;  // ids when queued (detects stale entries)
    int32_t right_id;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  Pieces pieces;
};

BpeTokenizer::BpeTokenizer(Vocabulary vocab, BpeConfig config)
    : Tokenizer(std::move(vocab)), config_(std::move(config)) {}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(Vocabulary vocab, BpeConfig config) {
  TESSERA_CHECK(vocab.scores.size() == vocab.tokens.size());
  TESSERA_CHECK(vocab.types.size() == vocab.tokens.size());
  if (config.merges.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return data_loss(fmt::format("{} merges: too many", config.merges.size()));
  }
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(vocab), std::move(config)));
  const Vocabulary& v = t->vocab_;
  t->token_ids_.reserve(v.tokens.size());
  for (int32_t id = 0; id < t->n_vocab(); ++id) {
    // Control tokens are matched only as specials (SpecialTokenMatcher), never
    // by a lookup or a merge of plain text: untrusted text that spells one,
    // or merges into one, stays ordinary pieces (SentencePiece does the same).
    const std::string& text = v.tokens[static_cast<size_t>(id)];
    if (!text.empty() && v.types[static_cast<size_t>(id)] != TokenType::kControl) {
      t->token_ids_.emplace(text, id);  // first id wins
    }
  }
  t->byte_fallback_ids_.fill(-1);
  for (int32_t id = 0; id < t->n_vocab(); ++id) {
    if (v.types[static_cast<size_t>(id)] != TokenType::kByte) continue;
    const int b = parse_byte_token(v.tokens[static_cast<size_t>(id)]);
    if (b >= 0 && t->byte_fallback_ids_[static_cast<size_t>(b)] < 0) t->byte_fallback_ids_[static_cast<size_t>(b)] = id;
  }
  t->all_byte_fallback_ =
      std::all_of(t->byte_fallback_ids_.begin(), t->byte_fallback_ids_.end(), [](int32_t id) { return id >= 0; });
  for (int b = 0; b < 256; ++b) {
    t->byte_level_ids_[static_cast<size_t>(b)] = t->find_token(byte_unicode::byte_to_utf8(static_cast<uint8_t>(b)));
  }
  t->merges_.reserve(t->config_.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < t->config_.merges.size(); ++rank) {
    const auto& [a, b] = t->config_.merges[rank];
    const int32_t left = t->find_token(a);
    const int32_t right = t->find_token(b);
    joined.assign(a).append(b);
    const int32_t merged = t->find_token(joined);
    if (left < 0 || right < 0 || merged < 0) continue;
    t->merges_.emplace(pair_key(left, right), Merge{static_cast<int32_t>(rank), merged});  // first rank wins
  }
  t->config_.merges.clear();
  t->config_.merges.shrink_to_fit();
  t->specials_ = SpecialTokenMatcher(t->vocab_, /*control=*/true, /*user_defined=*/true);
  return t;
}

int32_t BpeTokenizer::find_token(std::string_view text) const {
  const auto it = token_ids_.find(text);
  return it == token_ids_.end() ? -1 : it->second;
}

std::vector<std::pair<std::string, std::string>> BpeTokenizer::ranked_merges() const {
  std::vector<std::pair<int32_t, uint64_t>> by_rank;
  by_rank.reserve(merges_.size());
  for (const auto& [key, merge] : merges_) by_rank.emplace_back(merge.rank, key);
  std::sort(by_rank.begin(), by_rank.end());
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(by_rank.size());
  for (const auto& [rank, key] : by_rank) {
    out.emplace_back(vocab_.tokens[static_cast<size_t>(key >> 32)],
                     vocab_.tokens[static_cast<size_t>(key & 0xFFFFFFFFu)]);
  }
  return out;
}

const BpeTokenizer::Merge* BpeTokenizer::find_merge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special) const {
  return encode(text, add_special, std::span<const TextRange>());
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          std::span<const TextRange> special_ranges) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  Scratch scratch;
  std::vector<SpecialTokenMatcher::Fragment> fragments;
  specials_.split(text, special_ranges, fragments);
  for (const SpecialTokenMatcher::Fragment& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
    } else {
      encode_fragment(f.text, f.text.data() == text.data(), out, scratch);
    }
  }
  if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
  return out;
}

void BpeTokenizer::encode_fragment(std::string_view text, bool at_text_start, std::vector<int32_t>& out,
                                   Scratch& s) const {
  std::string normalized;
  if (!config_.normalizer.empty()) {
    normalized = config_.normalizer.apply(text);
    text = normalized;
  }
  if (config_.pre_tokenizer.empty()) {
    s.pieces.clear();
    if (!text.empty()) s.pieces.views.push_back(text);
  } else {
    config_.pre_tokenizer.run(text, at_text_start, s.pieces);
  }
  for (std::string_view piece : s.pieces.views) encode_piece(piece, s.pieces.raw_bytes, out, s);
}

void BpeTokenizer::append_unknown(std::string_view bytes, bool after_unknown, std::vector<int32_t>& out) const {
  if (config_.byte_fallback && all_byte_fallback_) {
    for (char c : bytes) out.push_back(byte_fallback_ids_[static_cast<uint8_t>(c)]);
    return;
  }
  if (vocab_.unk_id < 0) return;
  // fuse_unk: one <unk> for a run of unknown symbols of one piece (as in
  // Hugging Face), never fused with a BOS or special token that shares its id.
  if (config_.fuse_unk && after_unknown) return;
  out.push_back(vocab_.unk_id);
}

void BpeTokenizer::encode_piece(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out, Scratch& s) const {
  if (piece.empty()) return;
  TESSERA_CHECK(piece.size() < std::numeric_limits<int32_t>::max());
  if (config_.ignore_merges) {
    const int32_t whole = raw_bytes ? find_token(byte_unicode::encode(piece)) : find_token(piece);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  using Symbol = Scratch::Symbol;
  using Candidate = Scratch::Candidate;
  std::vector<Symbol>& sym = s.symbols;
  sym.clear();
  if (raw_bytes) {
    for (size_t i = 0; i < piece.size(); ++i) {
      sym.push_back({byte_level_ids_[static_cast<uint8_t>(piece[i])], static_cast<uint32_t>(i), 1,
                     static_cast<int32_t>(i) - 1, static_cast<int32_t>(i) + 1});
    }
  } else {
    for (size_t pos = 0; pos < piece.size();) {
      const size_t len = utf8::char_length(piece.substr(pos));
      const auto slot = static_cast<int32_t>(sym.size());
      sym.push_back({find_token(piece.substr(pos, len)), static_cast<uint32_t>(pos), static_cast<uint32_t>(len),
                     slot - 1, slot + 1});
      pos += len;
    }
  }
  sym.back().next = -1;

  if (sym.size() > 1) {
    // Min-heap on (rank, left slot).
    auto worse = [](const Candidate& a, const Candidate& b) {
      return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    };
    std::vector<Candidate>& heap = s.heap;
    heap.clear();
    auto try_pair = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const Symbol& l = sym[static_cast<size_t>(left)];
      const Symbol& r = sym[static_cast<size_t>(right)];
      const Merge* m = find_merge(l.id, r.id);
      if (m == nullptr) return;
      heap.push_back({m->rank, left, right, l.id, r.id});
      std::push_heap(heap.begin(), heap.end(), worse);
    };
    for (size_t i = 1; i < sym.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), worse);
      const Candidate c = heap.back();
      heap.pop_back();
      Symbol& l = sym[static_cast<size_t>(c.left)];
      Symbol& r = sym[static_cast<size_t>(c.right)];
      if (l.length == 0 || r.length == 0 || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
      const Merge* m = find_merge(l.id, r.id);
      l.id = m->id;
      l.length += r.length;
      l.next = r.next;
      r.length = 0;
      if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = c.left;
      try_pair(l.prev, c.left);
      try_pair(c.left, l.next);
    }
  }

  bool after_unknown = false;
  for (int32_t i = 0; i >= 0; i = sym[static_cast<size_t>(i)].next) {
    const Symbol& x = sym[static_cast<size_t>(i)];
    if (x.id >= 0) {
      out.push_back(x.id);
    } else {
      append_unknown(piece.substr(x.offset, x.length), after_unknown, out);
    }
    after_unknown = x.id < 0;
  }
}

std::string BpeTokenizer::token_to_piece(int32_t id) const {
  if (!in_range(id)) return {};
  const auto i = static_cast<size_t>(id);
  const std::string& text = vocab_.tokens[i];
  switch (vocab_.types[i]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      return {};
    case TokenType::kUserDefined:
      return text;
    case TokenType::kByte: {
      const int b = parse_byte_token(text);
      return b < 0 ? std::string() : std::string(1, static_cast<char>(b));
    }
    case TokenType::kUndefined:
    case TokenType::kNormal:
    case TokenType::kUnused:
      break;
  }
  if (config_.decode_byte_level) return byte_unicode::decode(text);
  std::string out = text;
  for (const auto& [from, to] : config_.decode_replacements) replace_all(out, from, to);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  bool strip = config_.strip_leading_space;
  for (int32_t id : ids) {
    const std::string piece = token_to_piece(id);
    if (piece.empty()) continue;
    if (strip && piece[0] == ' ') {
      out.append(piece, 1, std::string::npos);
    } else {
      out.append(piece);
    }
    strip = false;
  }
  return out;
}

}  // namespace tessera
