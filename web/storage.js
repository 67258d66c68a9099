// What the page keeps in this browser's localStorage: conversations, the current one,
// settings and the API key, each as JSON under its key.

export const STORE = {
  conversations: "tessera.conversations",
  current: "tessera.current",
  settings: "tessera.settings",
  apiKey: "tessera.apiKey",
};

// The stored value of `key`, or `fallback` when it is missing or not JSON.
export function load(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v ?? fallback;
  } catch {
    return fallback;
  }
}

// Stored data may be old, hand-edited or from another page on this origin: keep only what has the right shape.
export function sanitizeConversations(list) {
  if (!Array.isArray(list)) return [];
  const ok = [];
  for (const c of list) {
    if (!c || typeof c !== "object" || typeof c.id !== "string" || !Array.isArray(c.messages)) continue;
    const messages = c.messages
      .filter((m) => m && typeof m === "object" && ["user", "assistant", "system"].includes(m.role) && typeof m.content === "string")
      .map((m) => ({ role: m.role, content: m.content, stats: m.stats && typeof m.stats === "object" ? m.stats : null }));
    ok.push({
      id: c.id,
      title: typeof c.title === "string" ? c.title : "",
      mode: c.mode === "completion" ? "completion" : "chat",
      messages,
      updated: Number(c.updated) || 0,
    });
  }
  return ok;
}
