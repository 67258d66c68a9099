// The chat page served by `tessera serve` at GET /. Talks to the server's
// OpenAI-compatible API only: /v1/models, /v1/chat/completions and
// /v1/completions with stream: true. Conversations, settings and the API key
// live in this browser's localStorage. Model text is untrusted: it reaches the
// page only as text nodes (markdown.js), never as HTML.
import { parseMarkdown, renderToDom } from "./markdown.js";
import { DEFAULTS, NUMBER_FIELDS, samplingFields } from "./sampling.js";
import { readEvents } from "./sse.js";
import { STORE, load, sanitizeConversations } from "./storage.js";

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

function store(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    $("settings-error").textContent = `could not save to local storage: ${e.message}`;
  }
}

const state = {
  conversations: sanitizeConversations(load(STORE.conversations, [])),
  currentId: load(STORE.current, null),
  settings: { ...DEFAULTS, ...(typeof load(STORE.settings, {}) === "object" ? load(STORE.settings, {}) : {}) },
  apiKey: typeof load(STORE.apiKey, "") === "string" ? load(STORE.apiKey, "") : "",
  model: null,
  controller: null,
};

function saveConversations() {
  store(STORE.conversations, state.conversations);
  store(STORE.current, state.currentId);
}

function current() {
  return state.conversations.find((c) => c.id === state.currentId) ?? null;
}

function newConversation(mode) {
  const c = { id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, title: "", mode, messages: [], updated: Date.now() };
  state.conversations.unshift(c);
  state.currentId = c.id;
  saveConversations();
  return c;
}

// ---- API ------------------------------------------------------------------

let keyPrompt = null;  // one dialog for every request that got a 401 meanwhile

function askApiKey() {
  keyPrompt ??= promptApiKey().finally(() => (keyPrompt = null));
  return keyPrompt;
}

function promptApiKey() {
  const dialog = $("key-dialog");
  $("key-input").value = "";
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        const key = dialog.returnValue === "ok" ? $("key-input").value.trim() : "";
        resolve(key || null);
      },
      { once: true },
    );
    dialog.showModal();
  });
}

// fetch() with the bearer token; on 401 asks for a key once and retries.
async function api(path, init = {}) {
  const send = () => {
    const headers = { ...(init.headers ?? {}) };
    if (state.apiKey) headers.Authorization = `Bearer ${state.apiKey}`;
    return fetch(path, { ...init, headers });
  };
  let r = await send();
  if (r.status === 401) {
    const key = await askApiKey();
    if (!key) return r;
    state.apiKey = key;
    store(STORE.apiKey, key);
    r = await send();
  }
  return r;
}

async function errorText(r) {
  try {
    const j = await r.json();
    if (j?.error?.message) return `${r.status}: ${j.error.message}`;
  } catch {}
  return `HTTP ${r.status}`;
}

async function loadModel() {
  try {
    const r = await api("v1/models");
    if (!r.ok) {
      $("model-name").textContent = `(${await errorText(r)})`;
      return;
    }
    const j = await r.json();
    state.model = typeof j?.data?.[0]?.id === "string" ? j.data[0].id : null;
    $("model-name").textContent = state.model ?? "";
  } catch (e) {
    $("model-name").textContent = `(${e.message})`;
  }
}

// ---- settings -------------------------------------------------------------

function showSettings() {
  for (const k of Object.keys(NUMBER_FIELDS)) $(k).value = state.settings[k];
  $("seed").value = state.settings.seed;
  $("system-prompt").value = state.settings.system;
  $("extra-json").value = state.settings.extra;
}

function readSettings() {
  const s = { ...state.settings };
  for (const [k, f] of Object.entries(NUMBER_FIELDS)) s[k] = $(k).value;
  s.seed = $("seed").value;
  s.system = $("system-prompt").value;
  s.extra = $("extra-json").value;
  state.settings = s;
  store(STORE.settings, s);
}

// ---- rendering ------------------------------------------------------------

async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    // navigator.clipboard needs a secure context (https or localhost); fall back to a selection.
    const t = el("textarea");
    t.value = text;
    document.body.appendChild(t);
    t.select();
    try {
      ok = document.execCommand("copy");
    } catch {}
    t.remove();
  }
  const label = button.textContent;
  button.textContent = ok ? "Copied" : "Copy failed";
  setTimeout(() => (button.textContent = label), 1200);
}

function copyButton(getText, cls = "copy") {
  const b = el("button", cls, "Copy");
  b.type = "button";
  b.addEventListener("click", () => copyText(getText(), b));
  return b;
}

function statsText(st) {
  if (!st) return "";
  if (st.error) return `error: ${st.error}`;
  const parts = [`${st.tokens} token${st.tokens === 1 ? "" : "s"}`];
  if (st.tokens_per_s != null) parts.push(`${st.tokens_per_s.toFixed(1)} tok/s`);
  if (st.ttft_ms != null) parts.push(`TTFT ${Math.round(st.ttft_ms)} ms`);
  if (st.finish) parts.push(st.finish === "stopped" ? "stopped" : `finish: ${st.finish}`);
  return parts.join(" · ");
}

function fillContent(node, msg, mode) {
  node.replaceChildren();
  if (msg.role !== "assistant" || mode === "completion") {
    node.classList.add("raw");
    node.textContent = msg.content;
    return;
  }
  renderToDom(parseMarkdown(msg.content), node, (pre, text) => pre.appendChild(copyButton(() => text)));
}

function messageView(msg, mode) {
  const box = el("div", `msg ${msg.role}`);
  const head = el("div", "role");
  const who = msg.role === "assistant" ? (mode === "completion" ? "completion" : "assistant") : mode === "completion" ? "prompt" : msg.role;
  head.appendChild(el("span", "", who));
  head.appendChild(copyButton(() => msg.content, "copy-message"));
  box.appendChild(head);
  const content = el("div", "content");
  fillContent(content, msg, mode);
  box.appendChild(content);
  if (msg.role === "assistant") {
    const stats = el("div", `stats${msg.stats?.error ? " error" : ""}`, statsText(msg.stats));
    if (!msg.stats && !msg.streaming) stats.textContent = "(interrupted)";
    box.appendChild(stats);
  }
  return box;
}

function renderConversationList() {
  const ul = $("conversations");
  ul.replaceChildren();
  for (const c of state.conversations) {
    const li = el("li", c.id === state.currentId ? "current" : "");
    const title = el("button", "title", c.title || "(empty)");
    title.type = "button";
    title.title = c.title;
    title.addEventListener("click", () => {
      if (state.controller) return;
      state.currentId = c.id;
      saveConversations();
      renderAll();
    });
    const del = el("button", "delete", "×");
    del.type = "button";
    del.title = "Delete this conversation";
    del.addEventListener("click", () => {
      if (state.controller && c.id === state.currentId) return;
      state.conversations = state.conversations.filter((x) => x.id !== c.id);
      if (state.currentId === c.id) state.currentId = state.conversations[0]?.id ?? null;
      saveConversations();
      renderAll();
    });
    li.append(title, del);
    ul.appendChild(li);
  }
}

function renderMessages() {
  const box = $("messages");
  box.replaceChildren();
  const c = current();
  $("mode").value = c?.mode ?? $("mode").value;
  if (!c || c.messages.length === 0) {
    const hint =
      (c?.mode ?? $("mode").value) === "completion"
        ? "Raw completion: the model continues your text (no chat template)."
        : "Send a message to start a conversation.";
    box.appendChild(el("div", "empty", hint));
    return;
  }
  for (const m of c.messages) box.appendChild(messageView(m, c.mode));
  box.scrollTop = box.scrollHeight;
}

function renderAll() {
  renderConversationList();
  renderMessages();
}

// ---- sending --------------------------------------------------------------

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  $("mode").disabled = busy;
  $("new-chat").disabled = busy;
}

async function send(text) {
  readSettings();
  let sampling;
  try {
    sampling = samplingFields(state.settings);
    $("settings-error").textContent = "";
  } catch (e) {
    $("settings-error").textContent = e.message;
    $("settings").hidden = false;
    return;
  }
  const mode = $("mode").value === "completion" ? "completion" : "chat";
  let c = current();
  if (!c || c.mode !== mode) c = newConversation(mode);
  if (!c.title) c.title = text.slice(0, 60);
  const body = { ...sampling, stream: true, stream_options: { include_usage: true } };
  if (state.model) body.model = state.model;
  if (mode === "chat") {
    const history = c.messages.filter((m) => m.role !== "system" && !m.stats?.error);
    const messages = [];
    if (state.settings.system.trim()) messages.push({ role: "system", content: state.settings.system });
    for (const m of history) messages.push({ role: m.role, content: m.content });
    messages.push({ role: "user", content: text });
    body.messages = messages;
  } else {
    body.prompt = text;
  }
  c.messages.push({ role: "user", content: text, stats: null });
  const reply = { role: "assistant", content: "", stats: null, streaming: true };
  c.messages.push(reply);
  c.updated = Date.now();
  saveConversations();
  renderAll();
  const view = $("messages").lastElementChild;
  view.classList.add("streaming");
  const contentNode = view.querySelector(".content");
  const statsNode = view.querySelector(".stats");

  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  const t0 = performance.now();
  let tFirst = null;
  let chunks = 0;
  let usage = null;
  let finish = null;
  let error = null;
  let frame = null;  // a repaint is queued (one per animation frame, however many tokens arrive)
  const repaint = () => {
    frame = null;
    fillContent(contentNode, reply, mode);
    statsNode.textContent = `${chunks} tokens…`;
    $("messages").scrollTop = $("messages").scrollHeight;
  };
  try {
    const r = await api(mode === "chat" ? "v1/chat/completions" : "v1/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!r.ok) throw new Error(await errorText(r));
    await readEvents(r, (ev) => {
      if (ev.error) throw new Error(ev.error.message ?? "the server reported an error");
      if (ev.usage) usage = ev.usage;
      const choice = ev.choices?.[0];
      if (!choice) return;
      const piece = mode === "chat" ? choice.delta?.content : choice.text;
      if (typeof piece === "string" && piece.length > 0) {
        const now = performance.now();
        tFirst ??= now;
        ++chunks;
        reply.content += piece;
        frame ??= requestAnimationFrame(repaint);
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    });
  } catch (e) {
    if (e.name === "AbortError") {
      finish = "stopped";
    } else {
      error = e.message;
    }
  }
  if (frame !== null) cancelAnimationFrame(frame);
  state.controller = null;
  setBusy(false);
  delete reply.streaming;
  const tokens = usage?.completion_tokens ?? chunks;
  if (error && !reply.content) {
    reply.stats = { error };
  } else {
    // Tokens over the whole request, as the reader waited for them. A decode-only rate (after the
    // first token) is not measurable here: the server sends the tokens of several engine steps in
    // one write, so a short reply's tokens can all arrive in the same millisecond.
    const totalMs = performance.now() - t0;
    reply.stats = {
      tokens,
      ttft_ms: tFirst != null ? tFirst - t0 : null,
      tokens_per_s: tokens > 0 && totalMs > 0 ? (tokens * 1000) / totalMs : null,
      finish: error ? `error: ${error}` : finish,
    };
  }
  c.updated = Date.now();
  saveConversations();
  view.classList.remove("streaming");
  fillContent(contentNode, reply, mode);
  statsNode.className = `stats${reply.stats.error ? " error" : ""}`;
  statsNode.textContent = statsText(reply.stats);
}

// ---- wiring ---------------------------------------------------------------

function init() {
  showSettings();
  if (!current()) state.currentId = state.conversations[0]?.id ?? null;
  renderAll();
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("input").value;
    if (!text.trim() || state.controller) return;
    $("input").value = "";
    send(text);
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => state.controller?.abort());
  $("new-chat").addEventListener("click", () => {
    newConversation($("mode").value === "completion" ? "completion" : "chat");
    renderAll();
    $("input").focus();
  });
  $("mode").addEventListener("change", () => {
    const c = current();
    if (c && c.messages.length === 0) {
      c.mode = $("mode").value === "completion" ? "completion" : "chat";
      saveConversations();
    } else {
      newConversation($("mode").value === "completion" ? "completion" : "chat");
    }
    renderAll();
  });
  $("toggle-settings").addEventListener("click", () => {
    const s = $("settings");
    s.hidden = !s.hidden;
    $("toggle-settings").setAttribute("aria-expanded", String(!s.hidden));
  });
  for (const id of [...Object.keys(NUMBER_FIELDS), "seed", "system-prompt", "extra-json"]) {
    $(id).addEventListener("change", readSettings);
  }
  $("reset-settings").addEventListener("click", () => {
    state.settings = { ...DEFAULTS };
    store(STORE.settings, state.settings);
    showSettings();
  });
  $("forget-key").addEventListener("click", () => {
    state.apiKey = "";
    localStorage.removeItem(STORE.apiKey);
  });
  loadModel();
}

init();
