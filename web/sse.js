// Server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html)
// read from a fetch() body, as /v1/completions and /v1/chat/completions send
// them with stream: true: `data: {json}` events, ended by `data: [DONE]`.

// Splits a growing text into complete events; feed() returns the data of each
// event finished by this piece (multi-line data joined with "\n").
export class SseParser {
  constructor() {
    this.buf = "";
  }
  feed(text) {
    this.buf += text.replace(/\r\n?/g, "\n");
    const events = [];
    let end;
    while ((end = this.buf.indexOf("\n\n")) >= 0) {
      const block = this.buf.slice(0, end);
      this.buf = this.buf.slice(end + 2);
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
      }
      if (data.length) events.push(data.join("\n"));
    }
    return events;
  }
}

// Calls onEvent(object) for each JSON event of `response` until [DONE] or the
// end of the body. A `signal` abort rejects with an AbortError (fetch's own).
export async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  for (;;) {
    const { value, done } = await reader.read();
    const events = parser.feed(done ? decoder.decode() : decoder.decode(value, { stream: true }));
    for (const data of events) {
      if (data === "[DONE]") return;
      let obj;
      try {
        obj = JSON.parse(data);
      } catch {
        throw new Error(`the server sent an event that is not JSON: ${data.slice(0, 80)}`);
      }
      onEvent(obj);
    }
    if (done) return;
  }
}
