// Unit tests of the web UI's markdown renderer and SSE parser (web/markdown.js, web/sse.js).
// Run by ctest (label `unit`) as `node --test markdown.test.mjs`; needs no npm packages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseMarkdown, renderToHtml, escapeHtml } from "../../web/markdown.js";
import { SseParser } from "../../web/sse.js";

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
