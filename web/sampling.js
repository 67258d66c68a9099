// The page's sampling settings and the request fields they become (pure; tested by
// tests/webui/modules.test.mjs).

// The `tessera run` defaults (README: "tessera run").
export const DEFAULTS = { temperature: 0.8, top_p: 0.95, top_k: 40, min_p: 0.05, max_tokens: 256, seed: "", system: "", extra: "" };
export const NUMBER_FIELDS = {
  temperature: { min: 0, max: 2, integer: false },
  top_p: { min: 0.000001, max: 1, integer: false },
  top_k: { min: 0, max: 1e9, integer: true },
  min_p: { min: 0, max: 1, integer: false },
  max_tokens: { min: 1, max: 1e9, integer: true },
};

// The sampling fields of a request body, or throws with a message naming the bad field.
export function samplingFields(s) {
  const out = {};
  for (const [k, f] of Object.entries(NUMBER_FIELDS)) {
    const v = Number(s[k]);
    if (String(s[k] ?? "").trim() === "" || !Number.isFinite(v) || v < f.min || v > f.max || (f.integer && !Number.isInteger(v))) {
      throw new Error(`${k} must be ${f.integer ? "an integer" : "a number"} in [${f.min}, ${f.max}]`);
    }
    out[k] = v;
  }
  if (String(s.seed ?? "").trim() !== "") {
    const seed = Number(s.seed);
    if (!Number.isSafeInteger(seed)) throw new Error("seed must be an integer");
    out.seed = seed;
  }
  if (String(s.extra ?? "").trim() !== "") {
    let extra;
    try {
      extra = JSON.parse(s.extra);
    } catch (e) {
      throw new Error(`extra request fields: ${e.message}`);
    }
    if (!extra || typeof extra !== "object" || Array.isArray(extra)) throw new Error("extra request fields must be a JSON object");
    Object.assign(out, extra);
  }
  return out;
}
