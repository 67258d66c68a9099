// libFuzzer target for chat templates (untrusted programs from model files)
// and their rendering with random messages. The input is a template source,
// optionally followed by a NUL byte and a JSON value used as `messages`
// (anything else: one user message). Must hold: parse and render return a
// Status, never throw, crash, hang past the time limit or read out of
// bounds; when render() succeeds, render_tagged() gives the same text with
// spans that cover it in order, without gaps, neighbours differing in origin.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::ordered_json;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view source = in.substr(0, nul);
  tessera::ChatTemplateOptions options;
  options.render_time_limit_ms = 200;  // the server's limit is 1 s; keep the fuzzer fast
  auto t = tessera::ChatTemplate::parse(source, options);
  if (!t.ok()) return 0;
  ordered_json messages = ordered_json::array({{{"role", "user"}, {"content", "Hello <s> </s>"}}});
  if (nul != std::string_view::npos) {
    ordered_json m = ordered_json::parse(in.substr(nul + 1), nullptr, /*allow_exceptions=*/false);
    if (!m.is_discarded()) messages = std::move(m);
  }
  const ordered_json caller = {{"messages", messages}};
  const ordered_json trusted = {{"add_generation_prompt", true}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
  ordered_json all = caller;
  for (auto it = trusted.begin(); it != trusted.end(); ++it) all[it.key()] = it.value();
  const auto plain = t->render(all);
  const auto tagged = t->render_tagged(caller, trusted);
  if (plain.ok() && tagged.ok()) {
    if (tagged->text != *plain) std::abort();
    size_t at = 0;
    for (size_t i = 0; i < tagged->spans.size(); ++i) {
      const tessera::TextSpan& s = tagged->spans[i];
      if (s.begin != at || s.end <= s.begin || s.end > tagged->text.size()) std::abort();
      if (i > 0 && tagged->spans[i - 1].origin == s.origin) std::abort();
      at = s.end;
    }
    if (at != tagged->text.size()) std::abort();
  }
  return 0;
}
