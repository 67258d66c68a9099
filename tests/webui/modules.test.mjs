// Unit tests of the web UI's modules that need no browser: the markdown renderer, the SSE parser,
// the sampling settings and the stored-data check (web/markdown.js, sse.js, sampling.js, storage.js).
// Run by ctest (label `unit`) as `node --test modules.test.mjs`; needs no npm packages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseMarkdown, renderToHtml, escapeHtml } from "../../web/markdown.js";
import { SseParser } from "../../web/sse.js";
import { DEFAULTS, samplingFields } from "../../web/sampling.js";
import { sanitizeConversations } from "../../web/storage.js";

const html = (md) => renderToHtml(parseMarkdown(md));

test("HTML in model text stays text", () => {
  assert.equal(html('<img src=x onerror="alert(1)">'), "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>");
  assert.equal(html("<script>alert('x')</script>"), "<p>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;</p>");
  assert.equal(html("**<b>x</b>**"), "<p><strong>&lt;b&gt;x&lt;/b&gt;</strong></p>");
  assert.equal(html("```html\n<div onclick=x>&amp;</div>\n```"),
               '<pre><code data-lang="html">&lt;div onclick=x&gt;&amp;amp;&lt;/div&gt;</code></pre>');
  assert.equal(escapeHtml(`&<>"'`), "&amp;&lt;&gt;&quot;&#39;");
});

test("links: only http(s) targets become links, and their text is escaped", () => {
  assert.equal(html("[a<b](https://example.com/x?a=1&b=2)"),
               '<p><a href="https://example.com/x?a=1&amp;b=2" rel="noopener noreferrer" target="_blank">a&lt;b</a></p>');
  assert.equal(html("[x](javascript:alert(1))"), "<p>[x](javascript:alert(1))</p>");
  assert.equal(html('[x](https://a.b/"onmouseover=1)'),
               '<p><a href="https://a.b/&quot;onmouseover=1" rel="noopener noreferrer" target="_blank">x</a></p>');
});

test("blocks: headings, lists, quotes, paragraphs, code fences", () => {
  assert.equal(html("# Title\n\nSome *em* and **strong** and `code`."),
               "<h1>Title</h1><p>Some <em>em</em> and <strong>strong</strong> and <code>code</code>.</p>");
  assert.equal(html("- one\n- two\n\n1. a\n2. b"), "<ul><li>one</li><li>two</li></ul><ol><li>a</li><li>b</li></ol>");
  assert.equal(html("> quoted\n> more"), "<blockquote><p>quoted\nmore</p></blockquote>");
  assert.equal(html("line one\nline two\n\nnext"), "<p>line one\nline two</p><p>next</p>");
  assert.equal(html("```js\nlet a = 1;\n\nlet b = 2;\n```\nafter"),
               '<pre><code data-lang="js">let a = 1;\n\nlet b = 2;</code></pre><p>after</p>');
});

test("a fence still streaming runs to the end of the text", () => {
  assert.equal(html("text\n```py\nprint(1)"), '<p>text</p><pre><code data-lang="py">print(1)</code></pre>');
});

test("snake_case words and lone stars are not emphasis", () => {
  assert.equal(html("a snake_case_name and 2 * 3 * 4"), "<p>a snake_case_name and 2 * 3 * 4</p>");
  assert.equal(html("**unclosed"), "<p>**unclosed</p>");
});

test("odd input never throws", () => {
  for (const s of ["", "```", "#", "-", "> ", "**", "`", "[](", "\r\n\r\n", null, undefined, "x".repeat(10000)]) {
    assert.equal(typeof html(s), "string");
  }
});

test("SSE: events split across pieces, CRLF, multi-line data, comments", () => {
  const p = new SseParser();
  assert.deepEqual(p.feed('data: {"a":'), []);
  assert.deepEqual(p.feed('1}\n\ndata: [DONE]'), ['{"a":1}']);
  assert.deepEqual(p.feed("\n\n"), ["[DONE]"]);
  assert.deepEqual(p.feed(": keep-alive\r\n\r\ndata:x\r\ndata: y\r\n\r\n"), ["x\ny"]);
});

test("sampling settings become request fields; bad ones name the field", () => {
  assert.deepEqual(samplingFields(DEFAULTS), { temperature: 0.8, top_p: 0.95, top_k: 40, min_p: 0.05, max_tokens: 256 });
  assert.deepEqual(samplingFields({ ...DEFAULTS, temperature: "0", seed: "42", extra: '{"ignore_eos": true, "stop": ["x"]}' }),
                   { temperature: 0, top_p: 0.95, top_k: 40, min_p: 0.05, max_tokens: 256, seed: 42, ignore_eos: true, stop: ["x"] });
  const bad = [
    [{ temperature: "" }, /^temperature must be a number in \[0, 2\]$/],
    [{ temperature: "3" }, /^temperature /],
    [{ top_p: "0" }, /^top_p /],
    [{ top_k: "1.5" }, /^top_k must be an integer/],
    [{ max_tokens: "0" }, /^max_tokens /],
    [{ min_p: "abc" }, /^min_p /],
    [{ seed: "1.5" }, /^seed must be an integer$/],
    [{ extra: "{oops" }, /^extra request fields: /],
    [{ extra: "[1]" }, /^extra request fields must be a JSON object$/],
    [{ extra: "null" }, /^extra request fields must be a JSON object$/],
  ];
  for (const [change, message] of bad) assert.throws(() => samplingFields({ ...DEFAULTS, ...change }), { message });
  assert.deepEqual(samplingFields({ ...DEFAULTS, seed: null, extra: undefined }).seed, undefined);
});

test("stored conversations keep only well-formed entries", () => {
  assert.deepEqual(sanitizeConversations({ not: "a list" }), []);
  assert.deepEqual(sanitizeConversations(null), []);
  const kept = sanitizeConversations([
    { id: "a", title: 5, mode: "weird", updated: "x",
      messages: [{ role: "user", content: "hi" }, { role: "tool", content: "x" }, { role: "assistant", content: 3 },
                 { role: "assistant", content: "yo", stats: { tokens: 1 }, extra: "dropped" }, null] },
    { id: 7, messages: [] },
    { id: "b", messages: "nope" },
    { id: "c", title: "t", mode: "completion", updated: 9, messages: [] },
  ]);
  assert.deepEqual(kept, [
    { id: "a", title: "", mode: "chat", updated: 0,
      messages: [{ role: "user", content: "hi", stats: null }, { role: "assistant", content: "yo", stats: { tokens: 1 } }] },
    { id: "c", title: "t", mode: "completion", updated: 9, messages: [] },
  ]);
});
