// `tessera bench --json --plot FILE.svg` on stories260K: the SVG has its title (the model), axes
// with units, a legend, and markers that carry exactly the numbers of the JSON (decode tokens/s
// and its bandwidth roofline, prefill tokens/s and GFLOP/s at each -p length). Run by ctest (label
// `cli`) as `node --test bench_plot.test.mjs` with TESSERA_BIN and TESSERA_MODEL set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const BIN = process.env.TESSERA_BIN;
const MODEL = process.env.TESSERA_MODEL;
const run = promisify(execFile);

function markers(svg) {
  const all = [...svg.matchAll(/<circle [^>]*data-series="([^"]*)" data-x="([^"]*)" data-y="([^"]*)"/g)];
  return (name) => all.filter((m) => m[1] === name).map((m) => [Number(m[2]), Number(m[3])]);
}

// fmt prints doubles in their shortest round-trip form, so the marker's number is the JSON's.
function assertSeries(series, name, expected) {
  assert.deepEqual(series(name), expected, name);
}

test("bench --plot draws the --json numbers against the roofline", async () => {
  assert.ok(BIN && MODEL, "set TESSERA_BIN and TESSERA_MODEL");
  const dir = await mkdtemp(join(tmpdir(), "tessera-bench-plot-"));
  try {
    const svgPath = join(dir, "bench.svg");
    const { stdout } = await run(BIN, ["bench", "-m", MODEL, "-p", "8,32", "-n", "4", "-r", "1", "-t", "1",
                                       "--json", "--plot", svgPath]);
    const r = JSON.parse(stdout);
    assert.deepEqual(r.runs.map((x) => x.prompt_tokens), [8, 32]);
    assert.equal(r.architecture, "llama");
    // stories260K is f32, so the cache's auto dtype is f32: 5 layers x 2 (K, V) x 32 (4 KV heads x 8) x 4 bytes.
    assert.equal(r.kv_cache_dtype, "f32");
    assert.equal(r.kv_bytes_per_token, 1280);
    assert.ok(r.bandwidth_gb_per_s > 0);
    for (const x of r.runs) {
      assert.ok(x.decode_tokens_per_s > 0 && x.prefill_tokens_per_s > 0 && x.prefill_gflops > 0, JSON.stringify(x));
      // The roofline is the bandwidth over the bytes read per token (weights + KV at that context).
      assert.equal(x.bytes_per_token, r.weight_bytes + r.kv_bytes_per_token * (x.prompt_tokens + x.decode_tokens / 2));
      assert.ok(x.decode_roofline_tokens_per_s > 0 &&
                x.decode_roofline_tokens_per_s <= r.bandwidth_gb_per_s * 1e9 / x.bytes_per_token * (1 + 1e-12));
      assert.ok(Math.abs(x.decode_fraction_of_roofline - x.decode_tokens_per_s / x.decode_roofline_tokens_per_s) < 1e-12);
    }

    const svg = await readFile(svgPath, "utf8");
    assert.match(svg, /^<\?xml [^>]*\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.ok(svg.includes(`<title>tessera bench: ${MODEL} (llama, 5 layers;`), "title names the model");
    assert.ok(svg.includes(basename(MODEL)));
    for (const t of ["Decode vs the memory-bandwidth roofline", "Prefill throughput",
                     "Prefill compute (no FLOP/s peak measured)"]) {
      assert.ok(svg.includes(`<g class="chart" data-title="${t}">`), `chart ${t}`);
    }
    for (const label of ["context (prompt tokens)", "decode tokens/s", "prompt tokens", "prefill tokens/s", "GFLOP/s"]) {
      assert.ok(svg.includes(`>${label}</text>`), `axis label ${label}`);
    }
    const decode = "measured decode (batch 1)", roof = "roofline: bandwidth / bytes read per token (labels: % reached)";
    for (const legend of [decode, roof, "measured prefill", "achieved prefill GFLOP/s"]) {
      assert.ok(svg.includes(`<g class="legend">`) && svg.includes(`>${legend}</text></g>`), `legend ${legend}`);
    }
    assert.ok((svg.match(/class="xtick"/g) || []).length >= 6 && (svg.match(/class="ytick"/g) || []).length >= 6);
    const series = markers(svg);
    assertSeries(series, decode, r.runs.map((x) => [x.prompt_tokens, x.decode_tokens_per_s]));
    assertSeries(series, roof, r.runs.map((x) => [x.prompt_tokens, x.decode_roofline_tokens_per_s]));
    assertSeries(series, "measured prefill", r.runs.map((x) => [x.prompt_tokens, x.prefill_tokens_per_s]));
    assertSeries(series, "achieved prefill GFLOP/s", r.runs.map((x) => [x.prompt_tokens, x.prefill_gflops]));
    // Each roofline point is labelled with decode's percentage of it.
    for (const x of r.runs) {
      assert.ok(svg.includes(`>${(100 * x.decode_fraction_of_roofline).toFixed(0)}%</text>`));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("bench --skip-bandwidth --plot FILE.html: no roofline, and JSON nulls", async () => {
  const dir = await mkdtemp(join(tmpdir(), "tessera-bench-plot-"));
  try {
    const htmlPath = join(dir, "bench.html");
    const { stdout } = await run(BIN, ["bench", "-m", MODEL, "-p", "8", "-n", "4", "-r", "1", "-t", "1",
                                       "--skip-bandwidth", "--json", "--plot", htmlPath]);
    const r = JSON.parse(stdout);
    assert.equal(r.bandwidth_gb_per_s, null);
    assert.equal(r.runs[0].decode_roofline_tokens_per_s, null);
    assert.equal(r.runs[0].decode_fraction_of_roofline, null);
    const html = await readFile(htmlPath, "utf8");
    assert.match(html, /^<!DOCTYPE html>/);
    assert.ok(html.includes("(not measured: --skip-bandwidth)"));
    assert.ok(!html.includes("roofline: bandwidth"));
    assertSeries(markers(html), "measured decode (batch 1)", [[8, r.runs[0].decode_tokens_per_s]]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("bench --plot with another extension is a usage error (exit 2, one line)", async () => {
  await assert.rejects(run(BIN, ["bench", "-m", MODEL, "--plot", "out.png"]), (e) => {
    assert.equal(e.code, 2);
    assert.equal(e.stderr.trim().split("\n").length, 1);
    assert.match(e.stderr, /--plot out\.png: the file must end in \.svg or \.html/);
    return true;
  });
});
