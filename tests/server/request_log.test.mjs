// `tessera serve --log-format json` on stories260K: every response carries X-Request-Id (the
// client's, or a generated 16-hex-digit id), the response `id` is built from it, and the request
// log has one JSON object per finished request whose token counts equal the response's `usage`.
// Run by ctest (label `server`) as `node --test request_log.test.mjs` with TESSERA_BIN and
// TESSERA_MODEL set; needs Node.js >= 20 only (built-in fetch, no npm packages).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const BIN = process.env.TESSERA_BIN;
const MODEL = process.env.TESSERA_MODEL;
const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "node", "chatml.jinja");
const GENERATED_ID = /^[0-9a-f]{16}$/;
// Longer than two 16-token KV blocks, so that a second request reuses full blocks from the prefix cache.
const LONG_PROMPT =
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her " +
  "friends. One day, she saw a big red ball under a tree.";

let server;
let base;
let stderr = "";

before(async () => {
  assert.ok(BIN && MODEL, "set TESSERA_BIN and TESSERA_MODEL");
  server = spawn(BIN, ["serve", "-m", MODEL, "--port", "0", "--threads", "1", "--log-format", "json",
                       "--chat-template", TEMPLATE], { stdio: ["ignore", "ignore", "pipe"] });
  server.stderr.on("data", (d) => (stderr += d));
  const deadline = Date.now() + 30000;
  for (;;) {
    const m = stderr.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) {
      base = `http://127.0.0.1:${m[1]}`;
      break;
    }
    if (server.exitCode !== null) throw new Error(`tessera serve exited (${server.exitCode}):\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`tessera serve did not listen within 30 s:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
});

after(() => {
  if (server && server.exitCode === null) server.kill("SIGKILL");
});

async function post(path, body, headers = {}) {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: r.status, id: r.headers.get("x-request-id"), text: await r.text() };
}

// Stops the server (SIGTERM: a clean exit) and returns its request log, keyed by request id.
async function stopAndReadLog() {
  const exited = new Promise((resolve) => server.once("exit", resolve));
  server.kill("SIGTERM");
  assert.equal(await exited, 0);
  const log = new Map();
  for (const line of stderr.split("\n")) {
    if (!line.startsWith("{")) continue;
    const rec = JSON.parse(line);  // every JSON line must parse
    assert.ok(!log.has(rec.request_id), `request id ${rec.request_id} logged twice`);
    log.set(rec.request_id, rec);
  }
  return log;
}

function assertUsage(rec, usage) {
  assert.equal(rec.prompt_tokens, usage.prompt_tokens);
  assert.equal(rec.cached_tokens, usage.prompt_tokens_details.cached_tokens);
  assert.equal(rec.generated_tokens, usage.completion_tokens);
  assert.equal(typeof rec.ttft_ms, "number");
  assert.ok(rec.ttft_ms >= 0 && rec.ttft_ms <= rec.e2e_ms, `ttft ${rec.ttft_ms} ms, e2e ${rec.e2e_ms} ms`);
  assert.match(rec.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
}

test("X-Request-Id is echoed or generated, and the JSON log matches usage", async () => {
  // 1. The client's id, a plain completion.
  const a = await post("/v1/completions", { prompt: LONG_PROMPT, max_tokens: 8, temperature: 0 },
                       { "X-Request-Id": "client-id-42" });
  assert.equal(a.status, 200, a.text);
  assert.equal(a.id, "client-id-42");
  const aBody = JSON.parse(a.text);
  assert.equal(aBody.id, "cmpl-client-id-42");
  assert.equal(aBody.usage.completion_tokens, 8);

  // 2. The same prompt again without an id: generated, and its full blocks come from the prefix cache.
  const b = await post("/v1/completions", { prompt: LONG_PROMPT, max_tokens: 4, temperature: 0 });
  assert.equal(b.status, 200, b.text);
  assert.match(b.id, GENERATED_ID);
  const bBody = JSON.parse(b.text);
  assert.equal(bBody.id, `cmpl-${b.id}`);
  const cached = bBody.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached > 0 && cached % 16 === 0 && cached < bBody.usage.prompt_tokens, `cached ${cached}`);

  // 3. A streamed chat with two choices; the SSE response carries the header and the chunk ids.
  const c = await post("/v1/chat/completions", {
    messages: [{ role: "user", content: "Tell me a story" }], max_tokens: 6, n: 2, temperature: 0.8, seed: 7,
    stream: true, stream_options: { include_usage: true },
  }, { "x-request-id": "chat/stream:1" });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.id, "chat/stream:1");
  const chunks = c.text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)));
  assert.ok(chunks.length > 2);
  for (const ch of chunks) assert.equal(ch.id, "chatcmpl-chat/stream:1");
  const cUsage = chunks[chunks.length - 1].usage;
  assert.ok(cUsage && cUsage.completion_tokens > 0);

  // 4. A request error still gets an id and a log line.
  const d = await post("/v1/completions", { prompt: "hi", max_tokens: -5 }, { "X-Request-Id": "bad-1" });
  assert.equal(d.status, 400, d.text);
  assert.equal(d.id, "bad-1");

  // 5. An id that cannot be echoed (a space) is refused with 400, answered under a generated id.
  const e = await post("/v1/completions", { prompt: "hi" }, { "X-Request-Id": "two words" });
  assert.equal(e.status, 400, e.text);
  assert.match(e.id, GENERATED_ID);
  assert.equal(JSON.parse(e.text).error.code, "invalid_request_id");

  // 6. Probes answer with an id but are not logged.
  const h = await fetch(`${base}/health`, { headers: { "X-Request-Id": "probe-1" } });
  assert.equal(h.status, 200);
  assert.equal(h.headers.get("x-request-id"), "probe-1");
  await h.text();

  const log = await stopAndReadLog();
  assert.equal(log.size, 5, [...log.keys()].join(" "));

  const la = log.get("client-id-42");
  assert.deepEqual([la.method, la.path, la.status, la.finish_reason], ["POST", "/v1/completions", 200, "length"]);
  assertUsage(la, aBody.usage);
  assert.equal(la.cached_tokens, 0);

  const lb = log.get(b.id);
  assertUsage(lb, bBody.usage);
  assert.equal(lb.cached_tokens, cached);
  assert.equal(lb.generated_tokens, 4);

  const lc = log.get("chat/stream:1");
  assert.deepEqual([lc.path, lc.status], ["/v1/chat/completions", 200]);
  assertUsage(lc, cUsage);
  const finishes = chunks.flatMap((ch) => ch.choices).filter((x) => x.finish_reason).sort((x, y) => x.index - y.index);
  assert.equal(lc.finish_reason, finishes.map((x) => x.finish_reason).join(","));

  const ld = log.get("bad-1");
  assert.deepEqual([ld.status, ld.prompt_tokens, ld.generated_tokens, ld.ttft_ms, ld.finish_reason],
                   [400, 0, 0, null, null]);
  assert.equal(log.get(e.id).status, 400);
  assert.ok(!log.has("probe-1"));
});
