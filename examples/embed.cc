// Embedding tessera through its public API (include/tessera/): load a model,
// stream a greedy completion, print its token count and TTFT.
// Usage: tessera_embed_example MODEL [PROMPT]
#include <cstdio>

#include "tessera/engine.h"

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s MODEL [PROMPT]\n", argv[0]), 2;
  tessera::EngineOptions options;
  options.model = argv[1];
  auto engine = tessera::Engine::create(options);
  if (!engine.ok()) return std::fprintf(stderr, "error: %s\n", engine.status().message().c_str()), 1;
  auto prompt = (*engine)->tokenize(argc > 2 ? argv[2] : "Once upon a time", /*add_special=*/true);
  if (!prompt.ok()) return std::fprintf(stderr, "error: %s\n", prompt.status().message().c_str()), 1;
  tessera::GenerationOptions gen;
  gen.max_tokens = 32;
  gen.sampling.temperature = 0;  // greedy
  int exit_code = 0;
  auto id = (*engine)->submit(*prompt, gen, [&](const tessera::RequestEvent& ev) {
    std::fputs(ev.step.text.c_str(), stdout);
    if (!ev.request_finished) return;
    if (!ev.error.ok())
      exit_code = std::fprintf(stderr, "\nerror: %s\n", ev.error.message().c_str()) > 0;
    else
      std::printf("\n[%d tokens, TTFT %.1f ms]\n", ev.metrics->generated_tokens, ev.metrics->ttft_ms);
  });
  if (!id.ok()) return std::fprintf(stderr, "error: %s\n", id.status().message().c_str()), 1;
  (*engine)->run_until_idle();
  return exit_code;
}
