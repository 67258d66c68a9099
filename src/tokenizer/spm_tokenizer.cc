#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <vector>
#include <utility>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace tessera {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ", SentencePiece's default

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_mergeable(TokenType t) {
  return t == TokenType::kNormal || t == TokenType::kUndefined || t == TokenType::kUserDefined ||
         t == TokenType::kUnused;
}

// ' ' -> U+2581.
std::string escape_spaces(std::string_view text, bool add_prefix) {
  std::string out;
  out.reserve(text.size() + 3 * (add_prefix ? 1 : 0) + text.size() / 4);
  if (add_prefix) out.append(kSpaceMark);
  for (char c : text) {
    if (c == ' ') {
      out.append(kSpaceMark);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// U+2581 -> ' '.
std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t hit = text.find(kSpaceMark, pos);
    if (hit == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    out.append(text.substr(pos, hit - pos));
    out.push_back(' ');
    pos = hit + kSpaceMark.size();
  }
  return out;
}

}  // namespace

int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = hex_digit(text[3]);
  const int lo = hex_digit(text[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

SpmTokenizer::SpmTokenizer(Vocabulary vocab) : Tokenizer(std::move(vocab)) {
  TESSERA_CHECK(vocab_.scores.size() == vocab_.tokens.size());
  TESSERA_CHECK(vocab_.types.size() == vocab_.tokens.size());
  byte_to_token_.fill(-1);
  mergeable_.reserve(vocab_.tokens.size());
  for (int32_t id = 0; id < n_vocab(); ++id) {
    const auto i = static_cast<size_t>(id);
    const TokenType type = vocab_.types[i];
    const std::string& text = vocab_.tokens[i];
    if (type == TokenType::kByte) {
      const int b = parse_byte_token(text);
      if (b >= 0 && byte_to_token_[static_cast<size_t>(b)] < 0) byte_to_token_[static_cast<size_t>(b)] = id;
      continue;
    }
    if (type == TokenType::kUserDefined && !text.empty()) user_defined_.push_back(id);
    // First id wins for duplicate texts.
    if (is_mergeable(type) && !text.empty()) mergeable_.emplace(text, id);
  }
  std::stable_sort(user_defined_.begin(), user_defined_.end(), [this](int32_t a, int32_t b) {
    return vocab_.tokens[static_cast<size_t>(a)].size() > vocab_.tokens[static_cast<size_t>(b)].size();
  });
  for (int32_t id : user_defined_) {
    const auto first = static_cast<uint8_t>(vocab_.tokens[static_cast<size_t>(id)][0]);
    user_defined_by_first_byte_[first].push_back(id);
  }
  build_pair_table();
}

void SpmTokenizer::PairTable::build(const std::vector<std::pair<uint64_t, int32_t>>& entries) {
  size_t capacity = 16;
  shift_ = 60;
  while (capacity < 2 * entries.size()) {
    capacity *= 2;
    --shift_;
  }
  mask_ = capacity - 1;
  slots_.assign(capacity, Slot{});
  for (const auto& [key, value] : entries) {
    size_t i = hash(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    slots_[i] = {key, value};
  }
}

void SpmTokenizer::build_pair_table() {
  int32_t next_key = n_vocab();
  // Key of a piece of a token: its own id, a fresh private key for a single
  // character, -1 for a multi-character non-token (never a symbol).
  auto key_for = [&](std::string_view piece) -> int32_t {
    const int32_t id = find_mergeable(piece);
    if (id >= 0) return id;
    if (utf8::char_length(piece) != piece.size()) return -1;
    const auto [it, inserted] = char_keys_.emplace(std::string(piece), next_key);
    if (inserted) ++next_key;
    return it->second;
  };
  std::vector<std::pair<uint64_t, int32_t>> entries;
  for (const auto& [text, id] : mergeable_) {
    for (size_t k = 1; k < text.size(); ++k) {
      const auto a = static_cast<uint8_t>(text[k - 1]);
      const auto b = static_cast<uint8_t>(text[k]);
      joinable_[a * 4u + (b >> 6u)] |= uint64_t{1} << (b & 63u);
    }
    for (size_t k = 1; k < text.size(); ++k) {
      const std::string_view t(text);
      const int32_t left = key_for(t.substr(0, k));
      if (left < 0) continue;
      const int32_t right = key_for(t.substr(k));
      if (right >= 0) entries.emplace_back(PairTable::pack(left, right), id);
    }
  }
  pair_merges_.build(entries);
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    byte_keys_[static_cast<size_t>(b)] = symbol_key(std::string_view(&c, 1));
  }
}

int32_t SpmTokenizer::symbol_key(std::string_view text) const {
  const int32_t id = find_mergeable(text);
  if (id >= 0) return id;
  const auto it = char_keys_.find(text);
  return it == char_keys_.end() ? -1 : it->second;
}

int32_t SpmTokenizer::find_mergeable(std::string_view text) const {
  const auto it = mergeable_.find(text);
  return it == mergeable_.end() ? -1 : it->second;
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 2 + 2);
  if (add_special && vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);

  // Splits at user-defined tokens; fragments between them go through BPE.
  bool after_special = true;  // the start of the text counts as "after a special token"
  auto emit_text = [&](std::string_view fragment) {
    if (fragment.empty()) return;
    const std::string escaped = escape_spaces(fragment, vocab_.add_space_prefix && after_special);
    encode_fragment(escaped, out);
    after_special = false;
  };
  size_t start = 0;
  if (!user_defined_.empty()) {
    size_t pos = 0;
    while (pos < text.size()) {
      int32_t match = -1;
      for (int32_t id : user_defined_by_first_byte_[static_cast<uint8_t>(text[pos])]) {
        const std::string& t = vocab_.tokens[static_cast<size_t>(id)];
        if (text.compare(pos, t.size(), t) == 0) {
          match = id;  // longest first
          break;
        }
      }
      if (match < 0) {
        ++pos;
        continue;
      }
      emit_text(text.substr(start, pos - start));
      out.push_back(match);
      after_special = true;
      pos += vocab_.tokens[static_cast<size_t>(match)].size();
      start = pos;
    }
  }
  emit_text(text.substr(start));

  if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) out.push_back(vocab_.eos_id);
  return out;
}

void SpmTokenizer::append_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
  for (char c : bytes) {
    const int32_t id = byte_to_token_[static_cast<uint8_t>(c)];
    if (id >= 0) {
      out.push_back(id);
    } else if (vocab_.unk_id >= 0) {
      out.push_back(vocab_.unk_id);
    }
  }
}

// Work buffers of encode_chunk(), reused across the chunks of a fragment.
struct SpmTokenizer::Scratch {
  // Merge tree: leaves are characters; an inner node records the two nodes it
  // was merged from so that unused tokens can be split back.
  struct Node {
    uint32_t offset;
    uint32_t length;
    int32_t left;
    int32_t right;
    int32_t key;  // symbol_key() of the node's text
  };
  // Live symbols in text order, as a doubly linked list over slots.
  struct Symbol {
    uint32_t offset;
    uint32_t length;  // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
    int32_t node;
    int32_t key;  // symbol_key() of the symbol's text
  };
  struct Candidate {
    float score;
    int32_t left;       // slot of the left symbol
    int32_t right;      // slot of the right symbol
    uint32_t length;    // combined byte length when queued (detects stale entries)
    int32_t id;         // the merged token
  };
  struct Lower {  // std heaps are max-heaps: "lower" = lower score, or further right
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.score != b.score) return a.score < b.score;
      return a.left > b.left;
    }
  };


  std::vector<Symbol> symbols;
  std::vector<Node> nodes;
  std::vector<Candidate> heap;  // max-heap under Lower
  std::vector<int32_t> stack;
};

void SpmTokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  // Split between two characters whose bytes (last of the left, first of the
  // right) are adjacent in no mergeable token: no symbol can ever span such
  // a boundary, so BPE on each side is independent and gives the same result.
  TESSERA_CHECK(text.size() < UINT32_MAX);
  Scratch scratch;
  size_t chunk = 0;
  for (size_t pos = 0; pos < text.size();) {
    const auto b0 = static_cast<uint8_t>(text[pos]);
    const size_t len = b0 < 0x80 ? 1 : utf8::char_length(text.substr(pos));
    if (pos > chunk && !joinable(static_cast<uint8_t>(text[pos - 1]), b0)) {
      encode_chunk(text.substr(chunk, pos - chunk), out, scratch);
      chunk = pos;
    }
    pos += len;
  }
  if (chunk < text.size()) encode_chunk(text.substr(chunk), out, scratch);
}

void SpmTokenizer::encode_chunk(std::string_view text, std::vector<int32_t>& out, Scratch& scratch) const {
  using Symbol = Scratch::Symbol;
  using Node = Scratch::Node;
  using Candidate = Scratch::Candidate;
  std::vector<Symbol>& symbols = scratch.symbols;
  std::vector<Node>& nodes = scratch.nodes;
  std::vector<Candidate>& heap = scratch.heap;
  symbols.clear();
  nodes.clear();
  heap.clear();
  for (size_t pos = 0; pos < text.size();) {
    const auto b0 = static_cast<uint8_t>(text[pos]);
    const size_t len = b0 < 0x80 ? 1 : utf8::char_length(text.substr(pos));
    const int32_t key = len == 1 ? byte_keys_[b0] : symbol_key(text.substr(pos, len));
    const auto slot = static_cast<int32_t>(symbols.size());
    nodes.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), -1, -1, key});
    symbols.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), slot - 1, slot + 1,
                       static_cast<int32_t>(nodes.size() - 1), key});
    pos += len;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  const Scratch::Lower lower;
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    if (l.key < 0 || r.key < 0) return;
    const int32_t id = pair_merges_.find(l.key, r.key);
    if (id < 0) return;
    heap.push_back({vocab_.scores[static_cast<size_t>(id)], left, right, l.length + r.length, id});
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& l = symbols[static_cast<size_t>(c.left)];
    Symbol& r = symbols[static_cast<size_t>(c.right)];
    // Lengths only grow, so unchanged lengths mean both symbols are as queued.
    if (l.length == 0 || r.length == 0 || l.next != c.right || l.length + r.length != c.length) continue;
    nodes.push_back({l.offset, c.length, l.node, r.node, c.id});
    l.node = static_cast<int32_t>(nodes.size() - 1);
    l.length = c.length;
    l.key = c.id;
    l.next = r.next;
    r.length = 0;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = c.left;
    try_pair(l.prev, c.left);
    try_pair(c.left, l.next);
  }

  std::vector<int32_t>& stack = scratch.stack;
  for (int32_t s = 0; s >= 0; s = symbols[static_cast<size_t>(s)].next) {
    stack.push_back(symbols[static_cast<size_t>(s)].node);
    while (!stack.empty()) {
      const Node node = nodes[static_cast<size_t>(stack.back())];
      stack.pop_back();
      const std::string_view piece = text.substr(node.offset, node.length);
      const int32_t id = node.key < n_vocab() ? node.key : -1;
      if (id >= 0 && vocab_.types[static_cast<size_t>(id)] != TokenType::kUnused) {
        out.push_back(id);
      } else if (node.left >= 0) {
        stack.push_back(node.right);  // popped after the left half
        stack.push_back(node.left);
      } else {
        append_bytes(piece, out);
      }
    }
  }
}

std::string SpmTokenizer::token_to_piece(int32_t id) const {
  if (!in_range(id)) return {};
  const auto i = static_cast<size_t>(id);
  switch (vocab_.types[i]) {
    case TokenType::kControl:
      return {};
    case TokenType::kUnknown:
      return std::string(kUnknownSurface);
    case TokenType::kByte: {
      const int b = parse_byte_token(vocab_.tokens[i]);
      return b < 0 ? std::string() : std::string(1, static_cast<char>(b));
    }
    case TokenType::kUndefined:
    case TokenType::kNormal:
    case TokenType::kUserDefined:
    case TokenType::kUnused:
      break;
  }
  return unescape_spaces(vocab_.tokens[i]);
}

std::string SpmTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  bool strip = vocab_.add_space_prefix;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id);
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
