// Minimal markdown for model replies: fenced code blocks, headings, lists,
// block quotes, paragraphs, and inline code / bold / italic / http(s) links.
// Model text is untrusted, so nothing here ever produces HTML from it:
// parseMarkdown() builds a tree of plain nodes whose text stays text, and
// renderToDom() turns it into elements with textContent only. renderToHtml()
// (for tests and copy-as-HTML) escapes every text node and attribute.
//
// Node: { tag: "p" | "h1".."h6" | "ul" | "ol" | "li" | "blockquote" | "pre" |
//         "code" | "strong" | "em" | "a" | "text", text?, lang?, href?, children? }

const FENCE = /^(\s{0,3})(```|~~~)\s*([\w+#.-]*)\s*$/;

// Block structure of `src`. An unclosed fence (a reply still streaming) runs to the end.
export function parseMarkdown(src) {
  const lines = String(src ?? "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let para = [];
  const flushPara = () => {
    if (para.length) out.push({ tag: "p", children: parseInline(para.join("\n")) });
    para = [];
  };
  for (let i = 0; i < lines.length; ) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      flushPara();
      const body = [];
      let j = i + 1;
      while (j < lines.length && !(lines[j].trim().startsWith(fence[2]) && lines[j].trim().replace(/[`~]/g, "") === "")) {
        body.push(lines[j]);
        ++j;
      }
      out.push({ tag: "pre", lang: fence[3] || "", text: body.join("\n") });
      i = j + 1;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flushPara();
      out.push({ tag: `h${heading[1].length}`, children: parseInline(heading[2].replace(/\s+#+\s*$/, "")) });
      ++i;
      continue;
    }
    const listKind = (l) => (/^\s*[-*+]\s+/.test(l) ? "ul" : /^\s*\d{1,9}[.)]\s+/.test(l) ? "ol" : null);
    const kind = listKind(line);
    if (kind) {
      flushPara();
      const items = [];
      while (i < lines.length && listKind(lines[i]) === kind) {
        const text = lines[i].replace(/^\s*(?:[-*+]|\d{1,9}[.)])\s+/, "");
        items.push({ tag: "li", children: parseInline(text) });
        ++i;
      }
      out.push({ tag: kind, children: items });
      continue;
    }
    if (/^\s*>\s?/.test(line)) {
      flushPara();
      const quoted = [];
      while (i < lines.length && /^\s*>\s?/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.push({ tag: "blockquote", children: parseMarkdown(quoted.join("\n")) });
      continue;
    }
    if (line.trim() === "") {
      flushPara();
    } else {
      para.push(line);
    }
    ++i;
  }
  flushPara();
  return out;
}

// Inline spans of one block: `code`, **strong**, *em* / _em_, [text](http(s) url).
export function parseInline(src) {
  const out = [];
  let text = "";
  const pushText = () => {
    if (text) out.push({ tag: "text", text });
    text = "";
  };
  for (let i = 0; i < src.length; ) {
    const rest = src.slice(i);
    let m;
    if ((m = /^`([^`\n]+)`/.exec(rest))) {
      pushText();
      out.push({ tag: "code", text: m[1] });
    } else if ((m = /^\*\*(?=\S)([^\n]*?\S)\*\*/.exec(rest))) {
      pushText();
      out.push({ tag: "strong", children: parseInline(m[1]) });
    } else if ((m = /^([*_])(?=\S)([^\n*_]*?\S)\1(?![\w])/.exec(rest)) && !/\w/.test(src[i - 1] ?? "")) {
      pushText();
      out.push({ tag: "em", children: parseInline(m[2]) });
    } else if ((m = /^\[([^\]\n]+)\]\((https?:\/\/[^\s()]+)\)/.exec(rest))) {
      pushText();
      out.push({ tag: "a", href: m[2], children: [{ tag: "text", text: m[1] }] });
    } else {
      text += src[i];
      ++i;
      continue;
    }
    i += m[0].length;
  }
  pushText();
  return out;
}

// Appends the elements of `nodes` to `parent` (a DOM element). `onCode(pre, text)`
// is called for each code block, so the caller can add a copy button.
export function renderToDom(nodes, parent, onCode) {
  const doc = parent.ownerDocument;
  for (const n of nodes) {
    if (n.tag === "text") {
      parent.appendChild(doc.createTextNode(n.text));
      continue;
    }
    if (n.tag === "pre") {
      const pre = doc.createElement("pre");
      const code = doc.createElement("code");
      if (n.lang) code.dataset.lang = n.lang;
      code.textContent = n.text;
      pre.appendChild(code);
      parent.appendChild(pre);
      if (onCode) onCode(pre, n.text);
      continue;
    }
    const el = doc.createElement(n.tag);
    if (n.tag === "a") {
      el.href = n.href;
      el.rel = "noopener noreferrer";
      el.target = "_blank";
    }
    if (n.text !== undefined) el.textContent = n.text;
    if (n.children) renderToDom(n.children, el, onCode);
    parent.appendChild(el);
  }
  return parent;
}

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// The same tree as an HTML string, every text and attribute escaped.
export function renderToHtml(nodes) {
  let s = "";
  for (const n of nodes) {
    if (n.tag === "text") {
      s += escapeHtml(n.text);
    } else if (n.tag === "pre") {
      const lang = n.lang ? ` data-lang="${escapeHtml(n.lang)}"` : "";
      s += `<pre><code${lang}>${escapeHtml(n.text)}</code></pre>`;
    } else if (n.tag === "a") {
      s += `<a href="${escapeHtml(n.href)}" rel="noopener noreferrer" target="_blank">${renderToHtml(n.children)}</a>`;
    } else {
      const inner = n.text !== undefined ? escapeHtml(n.text) : renderToHtml(n.children ?? []);
      s += `<${n.tag}>${inner}</${n.tag}>`;
    }
  }
  return s;
}
