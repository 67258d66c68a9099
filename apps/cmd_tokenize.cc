// `tessera tokenize` and `tessera detokenize`: text <-> token ids with a
// model's vocabulary only (a vocab-only GGUF works, or a Hugging Face
// directory with tokenizer.json + tokenizer_config.json).
#include <fmt/core.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "tessera/vocab.h"

namespace tessera::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool no_bos = false;
  bool special = false;
};

struct DetokenizeOptions {
  std::string model;
  std::vector<std::string> ids;
};

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("{}: cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "1,2, 3" / "1 2 3" (possibly split over several arguments) -> ids.
Result<std::vector<int32_t>> parse_ids(const std::vector<std::string>& args, int32_t n_vocab) {
  std::vector<int32_t> ids;
  for (const std::string& arg : args) {
    size_t pos = 0;
    while (pos < arg.size()) {
      while (pos < arg.size() && (arg[pos] == ',' || arg[pos] == ' ' || arg[pos] == '\t' || arg[pos] == '\n' ||
                                  arg[pos] == '[' || arg[pos] == ']')) {
        ++pos;
      }
      if (pos >= arg.size()) break;
      const char* begin = arg.c_str() + pos;
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(begin, &end, 10);
      if (end == begin || errno != 0) {
        return invalid_argument(
            fmt::format("\"{}\" is not a token id", arg.substr(pos, arg.find_first_of(", ", pos) - pos)));
      }
      if (v < 0 || v >= n_vocab) {
        return invalid_argument(fmt::format("token id {} is outside the vocabulary [0, {})", v, n_vocab));
      }
      ids.push_back(static_cast<int32_t>(v));
      pos = static_cast<size_t>(end - arg.c_str());
    }
  }
  return ids;
}

int tokenize_main(const TokenizeOptions& o) {
  if (o.text.empty() == o.file.empty() && !(o.text.empty() && o.file.empty())) {
    return fail(invalid_argument("give either TEXT or -f FILE, not both"));
  }
  std::string text = o.text;
  if (!o.file.empty()) {
    auto r = read_text_file(o.file);
    if (!r.ok()) return fail(r.status());
    text = std::move(r).value();
  }
  auto tok = Vocab::load(o.model);
  if (!tok.ok()) return fail(tok.status());
  const std::vector<int32_t> ids = (*tok)->encode(text, /*add_special=*/!o.no_bos, /*parse_special=*/o.special);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line.push_back(',');
    line.append(std::to_string(ids[i]));
  }
  fmt::print("{}\n", line);
  return 0;
}

int detokenize_main(const DetokenizeOptions& o) {
  auto tok = Vocab::load(o.model);
  if (!tok.ok()) return fail(tok.status());
  auto ids = parse_ids(o.ids, (*tok)->size());
  if (!ids.ok()) return fail(ids.status());
  auto text = (*tok)->decode(*ids);
  if (!text.ok()) return fail(text.status());
  fmt::print("{}\n", *text);
  return 0;
}

}  // namespace

Runner register_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* sub = app.add_subcommand("tokenize", "Print the token ids of a text (comma-separated, one line)");
  sub->add_option("-m,--model", o->model, "GGUF file (a vocab-only one works) or Hugging Face directory")->required();
  sub->add_option("text", o->text, "Text to tokenize");
  sub->add_option("-f,--file", o->file, "Read the text from this file instead");
  sub->add_flag("--no-bos", o->no_bos, "Do not add the model's BOS/EOS tokens");
  sub->add_flag("--special", o->special, "Match control tokens written in the text (e.g. <|im_start|>)");
  return [o] { return tokenize_main(*o); };
}

Runner register_detokenize(CLI::App& app) {
  auto o = std::make_shared<DetokenizeOptions>();
  CLI::App* sub = app.add_subcommand("detokenize", "Print the text of token ids");
  sub->add_option("-m,--model", o->model, "GGUF file (a vocab-only one works) or Hugging Face directory")->required();
  sub->add_option("ids", o->ids, "Token ids, separated by commas and/or spaces")->required();
  return [o] { return detokenize_main(*o); };
}

}  // namespace tessera::cli
