#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>
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

void SpmTokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  // Merge tree: leaves are characters; an inner node records the two nodes it
  // was merged from so that unused tokens can be split back.
  struct Node {
    uint32_t offset;
    uint32_t length;
    int32_t left;
    int32_t right;
  };
  // Live symbols in text order, as a doubly linked list over slots.
  struct Symbol {
    uint32_t offset;
    uint32_t length;  // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
    int32_t node;
  };
  struct Candidate {
    float score;
    int32_t left;       // slot of the left symbol
    int32_t right;      // slot of the right symbol
    uint32_t length;    // combined byte length when queued (detects stale entries)
  };
  struct Lower {  // priority_queue is a max-heap: "lower" = lower score, or further right
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.score != b.score) return a.score < b.score;
      return a.left > b.left;
    }
  };

  TESSERA_CHECK(text.size() < UINT32_MAX);
  std::vector<Symbol> symbols;
  std::vector<Node> nodes;
  symbols.reserve(text.size());
  nodes.reserve(text.size() * 2);
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8::char_length(text.substr(pos));
    const auto slot = static_cast<int32_t>(symbols.size());
    nodes.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), -1, -1});
    symbols.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), slot - 1, slot + 1,
                       static_cast<int32_t>(nodes.size() - 1)});
    pos += len;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::vector<Candidate> heap_storage;
  heap_storage.reserve(symbols.size());
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> queue(Lower{}, std::move(heap_storage));
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const uint32_t length = l.length + r.length;
    const int32_t id = find_mergeable(text.substr(l.offset, length));
    if (id < 0) return;
    queue.push({vocab_.scores[static_cast<size_t>(id)], left, right, length});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(c.left)];
    Symbol& r = symbols[static_cast<size_t>(c.right)];
    // Lengths only grow, so unchanged lengths mean both symbols are as queued.
    if (l.length == 0 || r.length == 0 || l.next != c.right || l.length + r.length != c.length) continue;
    nodes.push_back({l.offset, c.length, l.node, r.node});
    l.node = static_cast<int32_t>(nodes.size() - 1);
    l.length = c.length;
    l.next = r.next;
    r.length = 0;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = c.left;
    try_pair(l.prev, c.left);
    try_pair(c.left, l.next);
  }

  std::vector<int32_t> stack;
  for (int32_t s = 0; s >= 0; s = symbols[static_cast<size_t>(s)].next) {
    stack.push_back(symbols[static_cast<size_t>(s)].node);
    while (!stack.empty()) {
      const Node node = nodes[static_cast<size_t>(stack.back())];
      stack.pop_back();
      const std::string_view piece = text.substr(node.offset, node.length);
      const int32_t id = find_mergeable(piece);
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
