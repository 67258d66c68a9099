// `tessera bench-serve`: a load generator for a running `tessera serve` (or any
// OpenAI-compatible server that takes token-id prompts). It sends streaming
// /v1/completions requests at a fixed concurrency or with Poisson arrivals and
// reports throughput and TTFT / TPOT / ITL / end-to-end latency percentiles.
// Prompts are random token ids (--input-len) or the text prompts of a dataset
// (--dataset, bench_serve_dataset.h). `tessera bench serve` is the same command.
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench_serve_client.h"
#include "bench_serve_dataset.h"
#include "cli_common.h"
#include "progress_bar.h"
#include "svg_plot.h"

namespace tessera::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchServeOptions {
  std::string url = "http://127.0.0.1:8080";
  std::string api_key;       // for a server started with --api-key
  std::string concurrency;   // "4" or a sweep "1,4,16,64"; empty: unset
  std::string request_rate;  // requests/s, Poisson: "2" or a sweep "1,2,4,inf"; empty: unset
  std::string plot;          // --plot FILE.svg / FILE.html
  int num_prompts = 0;       // 0: the dataset's size, else 100
  std::string dataset;       // JSONL or ShareGPT file; empty: random prompts
  int input_len = 128;
  int output_len = 32;
  int shared_prefix_len = 0;
  int64_t vocab_size = 0;  // 0: probe the server
  uint64_t seed = 0;
  bool json_out = false;
};

// Largest valid token id + 1, by binary search over POST /detokenize (200 for valid ids, 400 otherwise).
Result<int64_t> probe_vocab(const ServerUrl& url) {
  int64_t lo = 1, hi = int64_t{1} << 24;  // lo valid, hi invalid
  TESSERA_ASSIGN_OR_RETURN(HttpReply first, http_call(url, "POST", "/detokenize", R"({"tokens":[0]})"));
  if (first.status != 200)
    return invalid_argument("cannot find the vocabulary size (POST /detokenize answered " +
                            std::to_string(first.status) + "); pass --vocab-size");
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    TESSERA_ASSIGN_OR_RETURN(HttpReply r, http_call(url, "POST", "/detokenize", json{{"tokens", {mid}}}.dump()));
    (r.status == 200 ? lo : hi) = mid;
  }
  return hi;
}

json request_body(json prompt, int output_len, const std::string& model) {
  json req = {{"prompt", std::move(prompt)},
              {"max_tokens", output_len},
              {"min_tokens", output_len},
              {"ignore_eos", true},
              {"temperature", 0},
              {"stream", true},
              {"stream_options", {{"include_usage", true}}}};
  if (!model.empty()) req["model"] = model;
  return req;
}

// Prompts: a shared prefix of random ids, then input_len random ids of each request's own.
std::vector<std::string> random_bodies(const BenchServeOptions& o, int64_t vocab, const std::string& model,
                                       std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> id(std::min<int64_t>(3, vocab - 1), vocab - 1);
  std::vector<int64_t> prefix(static_cast<size_t>(o.shared_prefix_len));
  for (auto& t : prefix) t = id(rng);
  std::vector<std::string> bodies;
  for (int i = 0; i < o.num_prompts; ++i) {
    std::vector<int64_t> p = prefix;
    for (int k = 0; k < o.input_len; ++k) p.push_back(id(rng));
    bodies.push_back(request_body(p, o.output_len, model).dump());
  }
  return bodies;
}

// Tokens of `text` by the server's POST /tokenize (no BOS).
Result<int64_t> count_tokens(const ServerUrl& url, const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(
      HttpReply r, http_call(url, "POST", "/tokenize", json{{"prompt", text}, {"add_special_tokens", false}}.dump()));
  json j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || j.is_discarded() || !j.contains("count") || !j["count"].is_number_integer()) {
    return invalid_argument("POST /tokenize answered " + std::to_string(r.status));
  }
  return j["count"].get<int64_t>();
}

// Dataset prompts, the first num_prompts cycling. Output length: the entry's own, else the
// token count of its reference reply (ShareGPT, by POST /tokenize; about 4 bytes per token
// when the server cannot tokenize), else --output-len.
std::vector<std::string> dataset_bodies(const BenchServeOptions& o, const std::vector<DatasetRequest>& dataset,
                                        const ServerUrl& url, const std::string& model) {
  std::vector<int> output_len(dataset.size(), 0);
  bool approximated = false;
  std::vector<std::string> bodies;
  for (int i = 0; i < o.num_prompts; ++i) {
    const size_t k = static_cast<size_t>(i) % dataset.size();
    const DatasetRequest& r = dataset[k];
    if (output_len[k] == 0) {
      int64_t n = r.output_len > 0 ? r.output_len : o.output_len;
      if (r.output_len == 0 && !r.reference_text.empty()) {
        auto counted = approximated ? Result<int64_t>(invalid_argument("")) : count_tokens(url, r.reference_text);
        if (!counted.ok() && !approximated) {
          approximated = true;
          fmt::print(stderr,
                     "bench-serve: note: cannot tokenize reference replies ({}); output lengths are "
                     "approximated as bytes / 4\n",
                     counted.status().message());
        }
        n = counted.ok() ? *counted : static_cast<int64_t>(r.reference_text.size() / 4);
      }
      output_len[k] = static_cast<int>(std::clamp<int64_t>(n, 1, 1 << 20));
    }
    bodies.push_back(request_body(r.prompt, output_len[k], model).dump());
  }
  return bodies;
}

struct Summary {
  double mean = 0, median = 0, p90 = 0, p99 = 0;
};

Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    const double pos = p * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
  };
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.median = pct(0.5);
  s.p90 = pct(0.9);
  s.p99 = pct(0.99);
  return s;
}

json summary_json(const Summary& s) {
  return {{"mean_ms", s.mean * 1e3}, {"median_ms", s.median * 1e3}, {"p90_ms", s.p90 * 1e3}, {"p99_ms", s.p99 * 1e3}};
}

// One load level: `concurrency` requests in flight at once, or Poisson
// arrivals at `rate` requests/s (infinity: all at once).
struct Level {
  int concurrency = 0;  // 0: by rate
  double rate = 0;
  std::string name() const {
    if (concurrency > 0) return fmt::format("concurrency {}", concurrency);
    return std::isinf(rate) ? std::string("rate inf") : fmt::format("rate {:g}/s", rate);
  }
};

struct LevelResult {
  json summary;                       // the fields bench-serve --json prints for one level
  std::vector<StreamTiming> timings;  // one per request, in send order
  std::vector<double> ttft, tpot;     // seconds, of the requests that succeeded
  int ok = 0;
};

LevelResult run_level(const BenchServeOptions& o, const Level& level, const ServerUrl& url_in,
                      const std::vector<std::string>& bodies, const std::string& model, size_t dataset_size) {
  const ServerUrl& url = url_in;
  std::mt19937_64 rng(o.seed + 1);
  // Arrival times: all at 0 under a fixed concurrency, else a Poisson process.
  std::vector<double> arrival(static_cast<size_t>(o.num_prompts), 0.0);
  if (level.concurrency == 0 && std::isfinite(level.rate)) {
    std::exponential_distribution<double> gap(level.rate);
    double t = 0;
    for (auto& a : arrival) a = (t += gap(rng));
  }
  const int workers =
      level.concurrency > 0 ? std::min(level.concurrency, o.num_prompts) : std::min(o.num_prompts, 1024);

  std::vector<StreamTiming> results(static_cast<size_t>(o.num_prompts));
  std::atomic<int> next{0}, finished{0}, errors{0};
  const auto t0 = Clock::now();
  auto work = [&] {
    for (int i; (i = next.fetch_add(1)) < o.num_prompts;) {
      std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(arrival[static_cast<size_t>(i)])));
      results[static_cast<size_t>(i)] = stream_completion(url, bodies[static_cast<size_t>(i)]);
      if (!results[static_cast<size_t>(i)].ok) ++errors;
      ++finished;
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back(work);
  ProgressBar bar("bench-serve " + level.name(), "requests");
  auto show = [&] { bar.update(finished.load(), o.num_prompts, fmt::format("{} errors", errors.load())); };
  std::mutex mu;
  std::condition_variable cv;
  bool all_done = false;  // guarded by mu
  std::thread progress([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return all_done; })) {
      lock.unlock();
      show();
      lock.lock();
    }
  });
  for (auto& t : threads) t.join();
  // Timed before the progress thread is stopped, so its redraw interval is not in the duration.
  const double duration = std::chrono::duration<double>(Clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mu);
    all_done = true;
  }
  cv.notify_all();
  progress.join();
  show();

  std::vector<double> ttft, tpot, itl, e2e;
  int64_t in_tokens = 0, out_tokens = 0;
  int ok = 0;
  std::string first_error;
  for (const auto& r : results) {
    if (!r.ok) {
      if (first_error.empty()) first_error = r.error;
      continue;
    }
    ++ok;
    in_tokens += r.prompt_tokens;
    out_tokens += r.completion_tokens;
    ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    if (r.completion_tokens > 1) tpot.push_back((r.e2e - r.ttft) / static_cast<double>(r.completion_tokens - 1));
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
  }
  const Summary s_ttft = summarize(ttft), s_tpot = summarize(tpot), s_itl = summarize(itl), s_e2e = summarize(e2e);
  LevelResult res;
  json out = {{"url", o.url},
              {"model", model},
              {"num_prompts", o.num_prompts},
              {"concurrency", level.concurrency > 0 ? json(level.concurrency) : json(nullptr)},
              {"request_rate", level.concurrency > 0    ? json(nullptr)
                               : std::isinf(level.rate) ? json("inf")
                                                        : json(level.rate)},
              {"dataset", dataset_size == 0 ? json(nullptr) : json(o.dataset)},
              {"input_len", dataset_size == 0 ? json(o.input_len) : json(nullptr)},
              {"output_len", dataset_size == 0 ? json(o.output_len) : json(nullptr)},
              {"shared_prefix_len", o.shared_prefix_len},
              {"completed", ok},
              {"errors", o.num_prompts - ok},
              {"duration_s", duration},
              {"request_throughput", ok / duration},
              {"input_tokens_per_s", static_cast<double>(in_tokens) / duration},
              {"output_tokens_per_s", static_cast<double>(out_tokens) / duration},
              {"total_input_tokens", in_tokens},
              {"total_output_tokens", out_tokens},
              {"ttft", summary_json(s_ttft)},
              {"tpot", summary_json(s_tpot)},
              {"itl", summary_json(s_itl)},
              {"e2e_latency", summary_json(s_e2e)}};
  if (!first_error.empty()) out["first_error"] = first_error;
  // Every request's own record (seconds -> ms), in send order.
  json requests = json::array();
  for (const StreamTiming& t : results) {
    json rec = {{"ok", t.ok},
                {"prompt_tokens", t.prompt_tokens},
                {"completion_tokens", t.completion_tokens},
                {"ttft_ms", t.ttft * 1e3},
                {"e2e_ms", t.e2e * 1e3}};
    rec["tpot_ms"] = t.ok && t.completion_tokens > 1
                         ? json((t.e2e - t.ttft) * 1e3 / static_cast<double>(t.completion_tokens - 1))
                         : json(nullptr);
    json itl_ms = json::array();
    for (double g : t.itl) itl_ms.push_back(g * 1e3);
    rec["itl_ms"] = std::move(itl_ms);
    if (!t.ok) rec["error"] = t.error;
    requests.push_back(std::move(rec));
  }
  out["requests"] = std::move(requests);
  res.summary = std::move(out);
  res.timings = std::move(results);
  res.ttft = std::move(ttft);
  res.tpot = std::move(tpot);
  res.ok = ok;
  return res;
}

// The one-level report (the table bench-serve has always printed).
void print_level(const json& j, size_t dataset_size) {
  fmt::print("{:<28}{}\n", "model", j["model"].get<std::string>());
  if (dataset_size > 0) fmt::print("{:<28}{} ({} entries)\n", "dataset", j["dataset"].get<std::string>(), dataset_size);
  const double duration = j["duration_s"].get<double>();
  fmt::print("{:<28}{} ok, {} errors in {:.2f} s\n", "requests", j["completed"].get<int>(), j["errors"].get<int>(),
             duration);
  fmt::print("{:<28}{:.2f}\n", "request throughput (req/s)", j["request_throughput"].get<double>());
  fmt::print("{:<28}{:.1f}\n", "input tokens/s", j["input_tokens_per_s"].get<double>());
  fmt::print("{:<28}{:.1f}\n", "output tokens/s", j["output_tokens_per_s"].get<double>());
  fmt::print("{:<12}{:>12}{:>12}{:>12}{:>12}\n", "ms", "mean", "median", "p90", "p99");
  for (const auto& [name, key] :
       {std::pair{"TTFT", "ttft"}, {"TPOT", "tpot"}, {"ITL", "itl"}, {"E2E", "e2e_latency"}}) {
    const json& s = j[key];
    fmt::print("{:<12}{:>12.2f}{:>12.2f}{:>12.2f}{:>12.2f}\n", name, s["mean_ms"].get<double>(),
               s["median_ms"].get<double>(), s["p90_ms"].get<double>(), s["p99_ms"].get<double>());
  }
  if (j.contains("first_error")) fmt::print("first error: {}\n", j["first_error"].get<std::string>());
}

std::string plot_title(const BenchServeOptions& o, const std::string& model, const std::vector<Level>& levels) {
  std::string workload = o.dataset.empty() ? fmt::format("{} prompt + {} output tokens", o.input_len, o.output_len)
                                           : "dataset " + o.dataset;
  return fmt::format("tessera bench serve: {} at {} ({}; {} requests per level, {} level{})",
                     model.empty() ? std::string("(unnamed model)") : model, o.url, workload, o.num_prompts,
                     levels.size(), levels.size() == 1 ? "" : "s");
}

// Empirical CDF of `v` (seconds) in ms: (value, fraction of requests at or below it).
std::vector<std::pair<double, double>> cdf_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < v.size(); ++i) {
    out.emplace_back(v[i] * 1e3, static_cast<double>(i + 1) / static_cast<double>(v.size()));
  }
  return out;
}

// Throughput against median and P99 TTFT and TPOT across the levels, and
// each level's TTFT and TPOT distributions (CDFs).
std::vector<PlotChart> serve_charts(const std::vector<Level>& levels, const std::vector<LevelResult>& results) {
  PlotChart ttft{"Throughput vs TTFT", "output throughput (tokens/s)", "TTFT (ms)", {}};
  PlotChart tpot{"Throughput vs TPOT", "output throughput (tokens/s)", "TPOT (ms)", {}};
  PlotSeries ttft_med{"median TTFT", {}, {}, true}, ttft_p99{"P99 TTFT", {}, {}, true};
  PlotSeries tpot_med{"median TPOT", {}, {}, true}, tpot_p99{"P99 TPOT", {}, {}, true};
  PlotChart ttft_cdf{"TTFT distribution per level", "TTFT (ms)", "fraction of requests", {}};
  PlotChart tpot_cdf{"TPOT distribution per level", "TPOT (ms)", "fraction of requests", {}};
  for (size_t i = 0; i < results.size(); ++i) {
    const json& j = results[i].summary;
    const double tps = j["output_tokens_per_s"].get<double>();
    const std::string label = levels[i].name();
    ttft_med.points.emplace_back(tps, j["ttft"]["median_ms"].get<double>());
    ttft_p99.points.emplace_back(tps, j["ttft"]["p99_ms"].get<double>());
    tpot_med.points.emplace_back(tps, j["tpot"]["median_ms"].get<double>());
    tpot_p99.points.emplace_back(tps, j["tpot"]["p99_ms"].get<double>());
    for (PlotSeries* s : {&ttft_med, &ttft_p99, &tpot_med, &tpot_p99}) s->labels.push_back(label);
    ttft_cdf.series.push_back({label, cdf_ms(results[i].ttft), {}, true});
    tpot_cdf.series.push_back({label, cdf_ms(results[i].tpot), {}, true});
  }
  ttft.series = {ttft_med, ttft_p99};
  tpot.series = {tpot_med, tpot_p99};
  return {ttft, tpot, ttft_cdf, tpot_cdf};
}

// The levels of --concurrency ("4", "1,4,16") or else --request-rate ("2", "1,2,inf").
Result<std::vector<Level>> parse_levels(const std::string& concurrency, const std::string& rate) {
  const bool by_rate = concurrency.empty();
  const std::string& list = by_rate ? rate : concurrency;
  const char* flag = by_rate ? "--request-rate" : "--concurrency";
  std::vector<Level> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t end = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, end - pos);
    pos = end + 1;
    Level l;
    try {
      size_t used = 0;
      if (by_rate) {
        l.rate = item == "inf" ? std::numeric_limits<double>::infinity() : std::stod(item, &used);
        if (item != "inf" && (used != item.size() || !(l.rate > 0) || !std::isfinite(l.rate))) throw 0;
      } else {
        l.concurrency = std::stoi(item, &used);
        if (used != item.size() || l.concurrency < 1 || l.concurrency > 4096) throw 0;
      }
    } catch (...) {
      return invalid_argument(fmt::format("{}: '{}' is not {}", flag, item,
                                          by_rate ? "a positive rate or inf" : "a concurrency in 1..4096"));
    }
    out.push_back(l);
  }
  if (out.size() > 64) return invalid_argument(fmt::format("{}: at most 64 levels", flag));
  return out;
}

int bench_serve_main(BenchServeOptions o, const std::vector<Level>& levels) {
  auto url = parse_server_url(o.url);
  if (!url.ok()) return fail(url.status());
  url->api_key = o.api_key;
  std::vector<DatasetRequest> dataset;
  if (!o.dataset.empty()) {
    auto d = load_dataset(o.dataset);
    if (!d.ok()) return fail(d.status());
    dataset = std::move(*d);
  }
  if (o.num_prompts == 0) o.num_prompts = dataset.empty() ? 100 : static_cast<int>(dataset.size());
  auto models = http_call(*url, "GET", "/v1/models", "");
  if (!models.ok()) return fail(models.status());
  std::string model;
  if (auto j = json::parse(models->body, nullptr, false);
      models->status == 200 && !j.is_discarded() && j.contains("data") && j["data"].is_array() && !j["data"].empty()) {
    model = j["data"][0].value("id", "");
  }
  std::mt19937_64 rng(o.seed);
  std::vector<std::string> bodies;
  if (dataset.empty()) {
    int64_t vocab = o.vocab_size;
    if (vocab == 0) {
      auto v = probe_vocab(*url);
      if (!v.ok()) return fail(v.status());
      vocab = *v;
    }
    bodies = random_bodies(o, vocab, model, rng);
  } else {
    bodies = dataset_bodies(o, dataset, *url, model);
  }
  std::vector<LevelResult> results;
  for (const Level& level : levels) results.push_back(run_level(o, level, *url, bodies, model, dataset.size()));
  const bool sweep = levels.size() > 1;
  if (!o.plot.empty()) {
    std::string error;
    if (!write_plot(o.plot, plot_title(o, model, levels), serve_charts(levels, results), &error)) {
      return fail(invalid_argument(error));
    }
    fmt::print(stderr, "bench-serve: wrote {}\n", o.plot);
  }
  if (o.json_out) {
    if (!sweep) {
      fmt::print("{}\n", results[0].summary.dump(2));
    } else {
      json levels_json = json::array();
      for (const LevelResult& r : results) levels_json.push_back(r.summary);
      fmt::print("{}\n", json{{"url", o.url},
                              {"model", model},
                              {"sweep", levels[0].concurrency > 0 ? "concurrency" : "request_rate"},
                              {"levels", std::move(levels_json)}}
                             .dump(2));
    }
  } else if (!sweep) {
    print_level(results[0].summary, dataset.size());
  } else {
    fmt::print("{:<28}{}\n", "model", model);
    if (!dataset.empty()) fmt::print("{:<28}{} ({} entries)\n", "dataset", o.dataset, dataset.size());
    fmt::print("{:<18}{:>6}{:>6}{:>9}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}\n", "level", "ok", "err", "req/s",
               "out tok/s", "TTFT med", "TTFT p99", "TPOT med", "TPOT p99", "ITL med", "E2E med");
    for (size_t i = 0; i < results.size(); ++i) {
      const json& j = results[i].summary;
      fmt::print("{:<18}{:>6}{:>6}{:>9.2f}{:>11.1f}{:>11.2f}{:>11.2f}{:>11.2f}{:>11.2f}{:>11.2f}{:>11.2f}\n",
                 levels[i].name(), j["completed"].get<int>(), j["errors"].get<int>(),
                 j["request_throughput"].get<double>(), j["output_tokens_per_s"].get<double>(),
                 j["ttft"]["median_ms"].get<double>(), j["ttft"]["p99_ms"].get<double>(),
                 j["tpot"]["median_ms"].get<double>(), j["tpot"]["p99_ms"].get<double>(),
                 j["itl"]["median_ms"].get<double>(), j["e2e_latency"]["median_ms"].get<double>());
    }
    fmt::print("(latencies in ms)\n");
    for (const LevelResult& r : results) {
      if (r.summary.contains("first_error")) {
        fmt::print("first error: {}\n", r.summary["first_error"].get<std::string>());
        break;
      }
    }
  }
  for (const LevelResult& r : results) {
    if (r.ok != o.num_prompts) return 1;
  }
  return 0;
}

}  // namespace

Runner register_bench_serve(CLI::App& app) {
  auto o = std::make_shared<BenchServeOptions>();
  CLI::App* sub =
      app.add_subcommand("bench-serve", "Load-test a running OpenAI-compatible server with streaming completions");
  sub->add_option("--url", o->url, "Server base URL")->capture_default_str();
  sub->add_option("--api-key", o->api_key, "Send 'Authorization: Bearer KEY' (for a server started with --api-key)");
  auto* conc = sub->add_option("--concurrency", o->concurrency,
                               "Requests in flight at once (1..4096), or a sweep run level by level: 1,4,16,64");
  sub->add_option("--request-rate", o->request_rate,
                  "Poisson arrivals at this many requests/s ('inf': all at once), or a sweep: 1,2,4,inf")
      ->excludes(conc);
  sub->add_option("--plot", o->plot,
                  "Draw the run as FILE.svg or FILE.html: throughput vs median/P99 TTFT and TPOT across the "
                  "levels, and each level's TTFT/TPOT distribution");
  sub->add_option("--num-prompts", o->num_prompts,
                  "Requests to send (default: 100, or the dataset's size; a dataset is cycled when shorter)")
      ->check(CLI::Range(1, 1000000));
  auto* dataset = sub->add_option("--dataset", o->dataset,
                                  "Prompts from FILE: JSONL lines {\"prompt\": ..., \"output_len\": N} or a ShareGPT "
                                  "JSON array (first human turn = prompt, gpt reply's tokens = output length)");
  sub->add_option("--input-len", o->input_len, "Random prompt token ids per request")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str()
      ->excludes(dataset);
  sub->add_option("--output-len", o->output_len,
                  "Tokens to generate per request (EOS ignored); with --dataset, for entries without a length")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--shared-prefix-len", o->shared_prefix_len, "Random token ids every prompt starts with")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str()
      ->excludes(dataset);
  sub->add_option("--vocab-size", o->vocab_size, "Draw ids below this (default: probe the server)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 30));
  sub->add_option("--seed", o->seed, "Prompt and arrival seed")->capture_default_str();
  sub->add_flag("--json", o->json_out,
                "Print the results as JSON, with every request's record (a sweep: one object per level)");
  return [o] {
    auto levels =
        parse_levels(o->concurrency.empty() && o->request_rate.empty() ? "1" : o->concurrency, o->request_rate);
    if (!levels.ok()) {
      fmt::print(stderr, "tessera: error: {} (see --help)\n", levels.status().message());
      return kExitUsage;
    }
    if (int rc = check_plot_flag(o->plot); rc != 0) return rc;
    return bench_serve_main(*o, *levels);
  };
}

}  // namespace tessera::cli
