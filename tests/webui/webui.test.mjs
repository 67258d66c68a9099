// The chat web UI (web/, served by `tessera serve` at /) in a real browser: Debian's headless
// Chromium driven by playwright-core, against a server on stories260K with a ChatML template and an
// API key. Run by ctest (label `server`) as `node --test webui.test.mjs` with TESSERA_BIN,
// TESSERA_MODEL and TESSERA_ARTIFACT_DIR (where webui.png is saved) set; TESSERA_CHROMIUM
// overrides /usr/bin/chromium. The tests run in order on one page, as one person would use it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const BIN = process.env.TESSERA_BIN;
const MODEL = process.env.TESSERA_MODEL;
const CHROMIUM = process.env.TESSERA_CHROMIUM || "/usr/bin/chromium";
const ARTIFACTS = process.env.TESSERA_ARTIFACT_DIR || join(tmpdir(), "tessera-webui-artifacts");
const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "..", "server", "node", "chatml.jinja");
const KEY = "webui-test-key";
const skip = !!MODEL && !existsSync(MODEL) && process.env.TESSERA_SKIP_MISSING_DATA === "1";

let servers = [];
let base;
let browser;
let page;
let profile;

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

// Starts `tessera serve` with `args` on a free port; resolves to its base URL once /health answers.
async function startServer(args) {
  const port = await freePort();
  const proc = spawn(BIN, ["serve", "-m", MODEL, "--port", String(port), "--threads", "1", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const entry = { proc, log: "" };
  proc.stdout.on("data", (d) => (entry.log += d));
  proc.stderr.on("data", (d) => (entry.log += d));
  servers.push(entry);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`tessera serve exited (${proc.exitCode}):\n${entry.log}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return url;
    } catch {}
    if (Date.now() > deadline) throw new Error(`no /health within 30 s:\n${entry.log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function api(path, body) {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
  return r.json();
}

// tessera_request_aborted_total from /metrics.
async function abortedRequests() {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^tessera_request_aborted_total (\S+)$/m.exec(text);
  assert.ok(m, "abort counter in /metrics");
  return Number(m[1]);
}

const lastReply = () => page.locator("#messages .msg.assistant").last();

// Fills the settings panel (opened if closed). Values are strings, as a person types them.
async function setSettings(values) {
  if (await page.locator("#settings").isHidden()) await page.click("#toggle-settings");
  for (const [id, v] of Object.entries(values)) await page.fill(`#${id}`, v);
  await page.locator(`#${Object.keys(values).at(-1)}`).dispatchEvent("change");
}

// Sends `text` from the composer and waits for the reply to finish (its stats line is final).
async function sendAndWait(text) {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
  await page.waitForFunction(() => {
    const m = [...document.querySelectorAll("#messages .msg.assistant")].at(-1);
    return m && !m.classList.contains("streaming") && /tok|error|stopped/.test(m.querySelector(".stats").textContent);
  }, null, { timeout: 60000 });
}

// The stored conversations, as the page keeps them in localStorage.
const stored = () => page.evaluate(() => JSON.parse(localStorage.getItem("tessera.conversations")));

before(async () => {
  if (skip) return;
  assert.ok(BIN && MODEL, "set TESSERA_BIN and TESSERA_MODEL");
  assert.ok(existsSync(MODEL), `${MODEL} is missing (TESSERA_SKIP_MISSING_DATA=1 skips this test)`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (scripts/install-deps.sh)`);
  // -c 2048: room for a long reply, so that the stop button has something to stop.
  base = await startServer(["--chat-template", TEMPLATE, "--api-key", KEY, "-c", "2048"]);
  profile = mkdtempSync(join(tmpdir(), "tessera-webui-profile-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1200, height: 800 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--disable-default-apps"],
  });
  await browser.grantPermissions(["clipboard-read", "clipboard-write"]);
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on("pageerror", (e) => console.error("page error:", e.message));
});

after(async () => {
  await browser?.close();
  for (const { proc, log } of servers) {
    if (proc.exitCode !== null) continue;
    const exited = new Promise((r) => proc.once("exit", (code) => r(code)));
    proc.kill("SIGTERM");
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 10000))]);
    if (code === "timeout") proc.kill("SIGKILL");
    assert.equal(code, 0, `tessera serve exit status; log:\n${log}`);
  }
  if (profile) rmSync(profile, { recursive: true, force: true });
});

test("GET / is the page with a strict CSP, open without the key; the API is not", { skip }, async () => {
  const r = await fetch(`${base}/`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
  assert.match(r.headers.get("content-security-policy"), /script-src 'self'/);
  assert.match(await r.text(), /<title>tessera<\/title>/);
  assert.equal((await fetch(`${base}/webui/app.js`)).headers.get("content-type"), "text/javascript; charset=utf-8");
  assert.equal((await fetch(`${base}/v1/models`)).status, 401);
  assert.equal((await fetch(`${base}/webui/missing.js`, { headers: { Authorization: `Bearer ${KEY}` } })).status, 404);
});

test("--no-webui: GET / is 404", { skip }, async () => {
  const url = await startServer(["--no-webui"]);
  const r = await fetch(`${url}/`);
  assert.equal(r.status, 404);
  assert.equal((await r.json()).error.code, "not_found");
  assert.equal((await fetch(`${url}/webui/app.js`)).status, 404);
});

test("the page asks for the API key once and names the model", { skip }, async () => {
  await page.goto(`${base}/`);
  await page.locator("#key-dialog").waitFor({ state: "visible" });
  await page.fill("#key-input", KEY);
  await page.click("#key-ok");
  await page.locator("#model-name", { hasText: basename(MODEL) }).waitFor();
  assert.equal(await page.evaluate(() => JSON.parse(localStorage.getItem("tessera.apiKey"))), KEY);
});

test("a reply streams in over several updates, and Stop cancels it on the server", { skip }, async (t) => {
  const abortedBefore = await abortedRequests();
  // Without EOS, stories260K writes until max_tokens: long enough to be stopped mid-reply.
  await setSettings({ max_tokens: "1900", "extra-json": '{"ignore_eos": true}' });
  // Record the reply's length at every change the page makes to it.
  await page.evaluate(() => {
    window.__lengths = [];
    new MutationObserver(() => {
      const c = [...document.querySelectorAll("#messages .msg.assistant .content")].at(-1);
      if (c) window.__lengths.push(c.textContent.length);
    }).observe(document.getElementById("messages"), { childList: true, subtree: true, characterData: true });
  });
  await page.fill("#input", "Tell me a long story.");
  await page.click("#send");
  await page.waitForFunction(() => window.__lengths.filter((n) => n > 0).length >= 3, null, { timeout: 30000 });
  assert.equal(await page.locator("#stop").isEnabled(), true);
  await page.click("#stop");
  await lastReply().locator(".stats", { hasText: "stopped" }).waitFor({ timeout: 10000 });
  const lengths = await page.evaluate(() => window.__lengths.filter((n) => n > 0));
  const distinct = [...new Set(lengths)];
  assert.ok(distinct.length >= 3, `reply grew in ${distinct.length} steps: ${lengths}`);
  for (let i = 1; i < distinct.length; ++i) assert.ok(distinct[i] > distinct[i - 1], `reply only grows: ${distinct}`);
  // The engine drops the request once the browser has closed the connection.
  let aborted = abortedBefore;
  for (let i = 0; i < 100 && aborted === abortedBefore; ++i) {
    await new Promise((r) => setTimeout(r, 50));
    aborted = await abortedRequests();
  }
  assert.equal(aborted, abortedBefore + 1, "tessera_request_aborted_total went up by one");
  const reply = (await stored())[0].messages.at(-1);
  assert.equal(reply.stats.finish, "stopped");
  assert.ok(reply.stats.tokens > 0 && reply.stats.tokens < 1900, `stopped after ${reply.stats.tokens} tokens`);
  assert.ok(reply.content.length > 0);
  assert.equal(await page.locator("#send").isEnabled(), true);
  t.diagnostic(`stopped after ${reply.stats.tokens} of 1900 tokens; the page grew the reply in ${distinct.length} steps`);
});

test("at temperature 0 the reply equals the API's greedy answer, with speed and TTFT", { skip }, async (t) => {
  await page.click("#new-chat");
  const system = "You tell short stories.";
  await setSettings({ "system-prompt": system, temperature: "0", max_tokens: "48", "extra-json": "" });
  const question = "Once upon a time";
  await sendAndWait(question);
  const want = await api("/v1/chat/completions", {
    messages: [{ role: "system", content: system }, { role: "user", content: question }],
    max_tokens: 48,
    temperature: 0,
  });
  const conv = (await stored())[0];
  const reply = conv.messages.at(-1);
  assert.ok(want.choices[0].message.content.length > 0);
  assert.equal(reply.content, want.choices[0].message.content);
  assert.equal(reply.stats.tokens, want.usage.completion_tokens);
  assert.equal(reply.stats.finish, want.choices[0].finish_reason);
  assert.ok(reply.stats.ttft_ms > 0 && reply.stats.ttft_ms < 10000, `TTFT ${reply.stats.ttft_ms} ms`);
  // tokens/s covers the whole request, TTFT included, so it is at most tokens / TTFT.
  assert.ok(reply.stats.tokens_per_s > 0, `${reply.stats.tokens_per_s} tokens/s`);
  assert.ok(reply.stats.tokens_per_s <= (reply.stats.tokens * 1000) / reply.stats.ttft_ms,
            `${reply.stats.tokens_per_s} tokens/s with TTFT ${reply.stats.ttft_ms} ms`);
  const statsLine = await lastReply().locator(".stats").textContent();
  t.diagnostic(`stats line: ${statsLine}`);
  assert.match(statsLine, new RegExp(`^${want.usage.completion_tokens} tokens · [0-9.]+ tok/s · TTFT \\d+ ms · finish: `));
  // The page shows the same words as the API (markdown only regroups whitespace here).
  const shown = (await lastReply().locator(".content").innerText()).replace(/\s+/g, " ").trim();
  assert.equal(shown, want.choices[0].message.content.replace(/\s+/g, " ").trim());

  // A second turn carries the first as history.
  await sendAndWait("And then?");
  const want2 = await api("/v1/chat/completions", {
    messages: [{ role: "system", content: system }, { role: "user", content: question },
               { role: "assistant", content: reply.content }, { role: "user", content: "And then?" }],
    max_tokens: 48,
    temperature: 0,
  });
  assert.equal((await stored())[0].messages.at(-1).content, want2.choices[0].message.content);
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, "webui.png") });
});

test("after a reload the conversations are kept and the key is not asked again", { skip }, async () => {
  const before = await stored();
  await page.reload();
  await page.locator("#model-name", { hasText: basename(MODEL) }).waitFor();
  assert.equal(await page.locator("#key-dialog").isVisible(), false);
  assert.deepEqual(await stored(), before);
  assert.equal(await page.locator("#conversations li").count(), before.length);
  assert.equal(before.length, 2);
  const shown = await page.locator("#messages .msg .content").allTextContents();
  assert.equal(shown.length, before[0].messages.length);
  assert.equal(shown[0], before[0].messages[0].content);
  // The earlier, stopped conversation is one click away.
  await page.locator("#conversations li .title").nth(1).click();
  await page.locator("#messages .msg.assistant .stats", { hasText: "stopped" }).waitFor();
  assert.equal(await page.inputValue("#temperature"), "0");
});

test("raw completion mode continues the prompt through /v1/completions", { skip }, async () => {
  await page.selectOption("#mode", "completion");
  await setSettings({ temperature: "0", max_tokens: "32" });
  await sendAndWait("Once upon a time");
  const want = await api("/v1/completions", { prompt: "Once upon a time", max_tokens: 32, temperature: 0 });
  const conv = (await stored())[0];
  assert.equal(conv.mode, "completion");
  assert.match(want.choices[0].text, /^, there was a little girl named Lily/);
  assert.equal(conv.messages.at(-1).content, want.choices[0].text);
  assert.equal(await lastReply().locator(".content").textContent(), want.choices[0].text);
  await page.screenshot({ path: join(ARTIFACTS, "webui-completion.png") });
});

test("stored HTML renders as text; markdown and code blocks render, with copy buttons", { skip }, async () => {
  const hostile = '<img src=x onerror="window.__pwned=1"> **bold** `x<y`\n\n```js\nlet a = "<b>";\n```';
  await page.evaluate((content) => {
    const convs = JSON.parse(localStorage.getItem("tessera.conversations"));
    convs.unshift({ id: "hostile", title: "<b>t</b>", mode: "chat", updated: 1,
                    messages: [{ role: "user", content: "<i>hi</i>" }, { role: "assistant", content, stats: null }] });
    localStorage.setItem("tessera.conversations", JSON.stringify(convs));
    localStorage.setItem("tessera.current", JSON.stringify("hostile"));
  }, hostile);
  await page.reload();
  await lastReply().waitFor();
  assert.equal(await page.locator("#messages img, #messages i, #messages b, #conversations b").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.match(await lastReply().locator(".content").textContent(), /<img src=x onerror="window.__pwned=1">/);
  assert.equal(await lastReply().locator("strong").textContent(), "bold");
  assert.equal(await lastReply().locator(":not(pre) > code").textContent(), "x<y");
  assert.equal(await lastReply().locator("pre code").textContent(), 'let a = "<b>";');
  assert.equal(await lastReply().locator("pre button.copy").count(), 1);
  await lastReply().locator("pre button.copy").click();
  await lastReply().locator("pre button.copy", { hasText: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'let a = "<b>";');
  await lastReply().locator("button.copy-message").click();
  await lastReply().locator("button.copy-message", { hasText: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), hostile);
  assert.equal(await page.locator("#messages .msg.user .content").textContent(), "<i>hi</i>");
  // Bad data in storage is dropped, not fatal.
  await page.evaluate(() => localStorage.setItem("tessera.conversations", '{"not": "a list"'));
  await page.reload();
  await page.locator("#messages .empty").waitFor();
});
