#include "bench_serve_dataset.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

namespace tessera::cli {

namespace {

using json = nlohmann::json;

// A {"prompt", "output_len" | "max_tokens"} object; `where` names it in errors.
Result<DatasetRequest> parse_prompt_object(const json& j, const std::string& where) {
  if (!j.is_object()) return invalid_argument(where + ": expected a JSON object");
  auto p = j.find("prompt");
  if (p == j.end() || !p->is_string()) return invalid_argument(where + ": \"prompt\" must be a string");
  DatasetRequest r;
  r.prompt = p->get<std::string>();
  for (const char* key : {"output_len", "max_tokens"}) {
    auto o = j.find(key);
    if (o == j.end()) continue;
    if (!o->is_number_integer() || o->get<int64_t>() < 1 || o->get<int64_t>() > (1 << 20)) {
      return invalid_argument(where + ": \"" + key + "\" must be an integer in [1, 1048576]");
    }
    r.output_len = o->get<int>();
    break;
  }
  return r;
}

// The first human turn and the first gpt turn after it; nullopt when either is missing.
std::optional<DatasetRequest> parse_sharegpt(const json& conversations) {
  if (!conversations.is_array()) return std::nullopt;
  DatasetRequest r;
  bool have_prompt = false;
  for (const json& turn : conversations) {
    if (!turn.is_object()) continue;
    const std::string from = turn.value("from", "");
    auto v = turn.find("value");
    if (v == turn.end() || !v->is_string()) continue;
    if (!have_prompt && (from == "human" || from == "user")) {
      r.prompt = v->get<std::string>();
      have_prompt = true;
    } else if (have_prompt && (from == "gpt" || from == "assistant")) {
      r.reference_text = v->get<std::string>();
      return r;
    }
  }
  return std::nullopt;
}

Result<std::vector<DatasetRequest>> parse_array(const std::string& text, const std::string& name) {
  json arr = json::parse(text, nullptr, false);
  if (arr.is_discarded() || !arr.is_array()) return invalid_argument(name + ": not a valid JSON array");
  std::vector<DatasetRequest> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& e = arr[i];
    const std::string where = name + ": element " + std::to_string(i);
    if (e.is_object() && e.contains("conversations")) {
      if (auto r = parse_sharegpt(e["conversations"])) out.push_back(std::move(*r));
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(DatasetRequest r, parse_prompt_object(e, where));
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<DatasetRequest>> parse_jsonl(const std::string& text, const std::string& name) {
  std::vector<DatasetRequest> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = name + ":" + std::to_string(n);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return invalid_argument(where + ": not valid JSON");
    TESSERA_ASSIGN_OR_RETURN(DatasetRequest r, parse_prompt_object(j, where));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

Result<std::vector<DatasetRequest>> parse_dataset(const std::string& text, const std::string& name) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return invalid_argument(name + ": the dataset is empty");
  TESSERA_ASSIGN_OR_RETURN(std::vector<DatasetRequest> out,
                           text[first] == '[' ? parse_array(text, name) : parse_jsonl(text, name));
  if (out.empty()) return invalid_argument(name + ": no usable request (JSONL prompts or ShareGPT human/gpt pairs)");
  return out;
}

Result<std::vector<DatasetRequest>> load_dataset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open the dataset");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_dataset(ss.str(), path);
}

}  // namespace tessera::cli
