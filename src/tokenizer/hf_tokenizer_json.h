// Hugging Face `tokenizers` files: tokenizer.json (serialized
// tokenizers::Tokenizer) and transformers' tokenizer_config.json, for
// models whose "model" is BPE (Sennrich et al. 2016): GPT-2-style byte-level
// BPE (Radford et al. 2019; Llama 3, Qwen2, DeepSeek, ...) and
// SentencePiece-style BPE with byte_fallback (Llama 2, Mistral).
//
// Supported tokenizer.json sections (anything else -> kUnimplemented naming it):
//   model          type "BPE": vocab {text: id}, merges ("a b" strings or
//                  ["a", "b"] pairs), unk_token, byte_fallback, fuse_unk,
//                  ignore_merges (dropout is ignored; a non-empty
//                  continuing_subword_prefix / end_of_word_suffix is refused).
//   added_tokens   [{id, content, special}]: special -> TokenType::kControl
//                  (matched only with parse_special), else kUserDefined
//                  (always matched). Ids may extend the vocab; unused ids in
//                  between become empty kUnused tokens.
//   normalizer     null, Sequence, Replace (String or Regex pattern), Prepend,
//                  NFC, NFD, NFKC, NFKD, Lowercase, Strip.
//   pre_tokenizer  null, Sequence, ByteLevel, Split (String or Regex;
//                  behaviors Removed/Isolated/MergedWithPrevious/
//                  MergedWithNext/Contiguous; invert), Digits, Punctuation,
//                  Metaspace, Whitespace, WhitespaceSplit.
//   decoder        null, Sequence, ByteLevel, Replace (String), ByteFallback,
//                  Fuse, Strip (of " " at the start), Metaspace.
//   post_processor TemplateProcessing (alone or in a Sequence): a special
//                  token before $A sets BOS and add_bos, one after it EOS and
//                  add_eos. Others are ignored.
// tokenizer_config.json: bos_token, eos_token, unk_token, pad_token (a
// string or {"content": ...}), add_bos_token and add_eos_token (override the
// post-processor), chat_template (a string, or a list of {name, template}
// where "default" or else the first is used).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tessera/status.h"
#include "tokenizer/bpe_tokenizer.h"

namespace tessera {

// Builds the tokenizer from the JSON texts. `config_json` may be empty (no
// tokenizer_config.json). `name` prefixes error messages. Errors: kDataLoss
// (invalid JSON, missing/ill-typed fields, ids out of range), kUnimplemented
// (unsupported model or pipeline step).
Result<std::unique_ptr<BpeTokenizer>> parse_hf_tokenizer(std::string_view tokenizer_json, std::string_view config_json,
                                                         const std::string& name);

// Reads the files and calls parse_hf_tokenizer(). `config_path` may be
// empty. kNotFound when a file cannot be read.
Result<std::unique_ptr<BpeTokenizer>> load_hf_tokenizer(const std::string& tokenizer_json_path,
                                                        const std::string& config_path);

}  // namespace tessera
