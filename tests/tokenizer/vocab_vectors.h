// llama.cpp's tokenizer test vectors (tests/test-tokenizer-0): NAME.gguf.inp
// holds the inputs, each followed by "\n__ggml_vocab_test__\n"; NAME.gguf.out
// holds one line per input with the expected ids separated by spaces.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::testing {

inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An input may itself start with or consist of newlines, so the separator is
// searched from the start of each input.
inline std::vector<std::string> read_vector_inputs(const std::string& path) {
  const std::string text = read_file_bytes(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t hit = text.find(sep, pos);
    if (hit == std::string::npos) {
      inputs.push_back(text.substr(pos));
      break;
    }
    inputs.push_back(text.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  return inputs;
}

inline std::vector<std::vector<int32_t>> read_vector_outputs(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<int32_t>> outputs;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    int64_t id = 0;
    while (ls >> id) ids.push_back(static_cast<int32_t>(id));
    outputs.push_back(std::move(ids));
  }
  return outputs;
}

inline std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s.append(" ").append(std::to_string(id));
  return s;
}

}  // namespace tessera::testing
