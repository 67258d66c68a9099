// One OpenAI completion or chat request while it runs: collects the engine's
// events for each of its prompts and choices and builds the response — a
// single JSON body, or server-sent events (https://html.spec.whatwg.org/
// multipage/server-sent-events.html: `data: <json>\n\n` per chunk, then
// `data: [DONE]`) shaped like OpenAI's completion / chat.completion.chunk
// objects. Not thread-safe: the owning connection drives it on its strand.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/openai_protocol.h"
#include "server/prompt_scores.h"
#include "server/reply.h"
#include "server/request_log.h"
#include "tessera/engine.h"

namespace tessera::server {

class CompletionJob {
 public:
  // `vocab` may be null (token pieces are then written as ids).
  CompletionJob(ParsedRequest request, std::string id, int64_t created, const Vocab* vocab);

  const ParsedRequest& request() const { return request_; }
  size_t num_prompts() const { return request_.prompts.size(); }
  bool streaming() const { return request_.stream; }

  // The SSE text sent before any token (chat: a role delta per choice).
  std::string stream_preamble() const;
  // One step of prompt `p`'s choice `ev.choice`; returns its SSE chunk when streaming ("" otherwise).
  std::string on_step(size_t p, const StreamEvent& ev);
  // Prompt `p` ended; returns its final SSE chunks (finish_reason) when streaming.
  std::string on_finished(size_t p, const RequestEvent& ev);
  // Scores of prompt `p`'s next tokens (in order; see prompt_scores.h).
  void on_prompt_scores(size_t p, std::vector<PromptTokenScore> scores);
  bool done() const { return finished_ == request_.prompts.size(); }
  // The first error of any prompt (engine failure), if any.
  const std::optional<Status>& error() const { return error_; }
  // After done(): the full response object (non-streaming).
  nlohmann::ordered_json response() const;
  // After done(): the usage chunk (when include_usage) and `data: [DONE]`.
  std::string stream_epilogue() const;
  // The request's metrics per prompt (valid once finished).
  const std::vector<RequestMetrics>& metrics() const { return metrics_; }
  // Fills the request log's token counts (equal to usage()), TTFT (the
  // earliest prompt's) and finish reasons ("cancelled" when the engine
  // cancelled any prompt) from what has finished so far.
  void fill_log_record(RequestLogRecord& r) const;

 private:
  struct UsageCounts {
    int64_t prompt = 0, completion = 0, cached = 0;
  };
  UsageCounts usage_counts() const;
  nlohmann::ordered_json usage() const;
  nlohmann::ordered_json chunk(nlohmann::ordered_json choices) const;
  // Chat: {"content": [...]}; completions: {tokens, token_logprobs,
  // top_logprobs, text_offset}, after the prompt's tokens when `prompt` is
  // given (echo; its first token's entries null). text_offset indexes the
  // choice's returned `text` (bytes): the prompt's tokens from prompt_offsets,
  // generated tokens from `text_offset` (echo: the prompt text's length) on,
  // each advanced by the bytes its token adds to the text, never past `text_size`.
  nlohmann::ordered_json logprobs_json(const std::vector<TokenLogprobs>& lps, const size_t* prompt = nullptr,
                                       size_t text_offset = 0, size_t text_size = SIZE_MAX) const;
  // Where each token of prompt `p` starts in prompt_texts[p]: its pieces'
  // bytes summed (control tokens such as BOS add none; SentencePiece's
  // leading space, which decoding drops, is not counted), clamped to the text.
  std::vector<size_t> prompt_offsets(size_t p) const;
  // vLLM's prompt_logprobs of prompt `p`: [null, {"id": {logprob, rank, decoded_token}}, ...].
  nlohmann::ordered_json prompt_logprobs_json(size_t p) const;
  // Streaming: the chunks that carry prompt `p`'s echo and prompt logprobs (once).
  std::string prompt_chunks(size_t p);
  std::string piece(int32_t id) const;

  ParsedRequest request_;
  std::string id_;
  int64_t created_;
  const Vocab* vocab_;
  std::vector<ChoiceResult> results_;                         // [prompt * n + choice]
  std::vector<RequestMetrics> metrics_;                       // [prompt]
  std::vector<std::vector<PromptTokenScore>> prompt_scores_;  // [prompt][token - 1]
  std::vector<bool> prompt_sent_;                             // [prompt] streaming: echo chunks written
  std::vector<size_t> stream_offset_;  // [prompt * n + choice] streaming: bytes of text sent so far (echo included)
  size_t finished_ = 0;
  std::optional<Status> error_;
  bool cancelled_ = false;  // the engine cancelled a prompt (client gone, server stopping)
};

// `data: <json>\n\n`.
std::string sse_event(const nlohmann::json& j);
std::string sse_event(const nlohmann::ordered_json& j);

}  // namespace tessera::server
