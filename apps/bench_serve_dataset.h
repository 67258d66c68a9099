// Request datasets for `tessera bench-serve --dataset FILE`: JSONL (one
// request per line) or a ShareGPT-style JSON array of conversations.
#pragma once

#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::cli {

// One benchmark request read from a dataset.
struct DatasetRequest {
  std::string prompt;
  int output_len = 0;          // tokens to generate; 0: not given (use --output-len)
  std::string reference_text;  // ShareGPT: the first gpt reply, whose token count becomes output_len
};

// Reads `path`. Formats, told apart by the first non-blank character:
// - JSONL: each non-blank line an object {"prompt": string, "output_len" or "max_tokens": int >= 1 (optional)};
// - '[': a JSON array whose elements are such objects, or ShareGPT entries
//   {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}: the first
//   human turn is the prompt, the first gpt turn after it the reference reply; entries without both are skipped.
// Errors (kInvalidArgument / kNotFound) name the file and line or element: unreadable file, bad JSON,
// a missing or non-string prompt, a bad output length, no usable request.
Result<std::vector<DatasetRequest>> load_dataset(const std::string& path);

// Parses dataset text (the file's contents); `name` is used in error messages.
Result<std::vector<DatasetRequest>> parse_dataset(const std::string& text, const std::string& name);

}  // namespace tessera::cli
