#!/usr/bin/env bash
# Soak test for `tessera serve` (issue #17; not in ctest): a mixed workload at
# steady concurrency for a given duration, then checks that the server's
# resident memory stayed flat and every KV block and request is accounted for.
#
#   scripts/soak.sh [--bin PATH] [--model GGUF] [--minutes M] [--workers N] [--out DIR]
#
# Defaults: build/release/bin/tessera, $TESSERA_SHARED_DIR/models/stories260K.gguf
# (else ../shared/models/stories260K.gguf), 10 minutes, 8 workers, a temp dir.
# Each worker loops until the deadline, picking one request kind in turn:
#   stream      streamed completion, 8..64 tokens, prompts sharing a prefix (prefix-cache hits)
#   cancel      streamed completion of 400 tokens cut by the client after ~0.2 s (curl --max-time)
#   n3          non-streamed completion with n = 3
#   long        a ~300-token prompt (completion of 16 tokens)
#   chat        chat completion (ChatML template tests/server/node/chatml.jinja)
#   bad         a bad request (invalid JSON, unknown model, max_tokens past the context): must be 4xx
# Every answer's status is checked against its kind (200, or a 4xx for `bad`,
# 429 allowed anywhere as load shedding; a cut stream's curl exit 28 is the
# cancel). The server's VmRSS is sampled every 10 s into DIR/rss.csv. At the end:
# after the engine is idle, /metrics must show no running or waiting request,
# kv_cache_usage_perc 0, no 5xx and no failed request; the RSS slope over the
# second half of the run (least squares) is printed in KiB/min. Exit 0 when
# every check passed, 1 otherwise.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/bin/tessera
MODEL=${TESSERA_SHARED_DIR:-$ROOT/../shared}/models/stories260K.gguf
MINUTES=10
WORKERS=8
OUT=""
usage() { echo "soak.sh: $1 (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --bin | --model | --minutes | --workers | --out) [ $# -ge 2 ] || usage "$1 needs a value" ;;
  esac
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) usage "unknown argument '$1'" ;;
  esac
done
case $MINUTES in '' | *[!0-9]* | 0) usage "--minutes must be a positive whole number, not '$MINUTES'" ;; esac
case $WORKERS in '' | *[!0-9]* | 0) usage "--workers must be a positive whole number, not '$WORKERS'" ;; esac
[ -x "$BIN" ] || { echo "soak.sh: no tessera binary at $BIN (build first or pass --bin)" >&2; exit 2; }
[ -f "$MODEL" ] || { echo "soak.sh: model not found: $MODEL (pass --model)" >&2; exit 2; }
command -v curl >/dev/null || { echo "soak.sh: needs curl" >&2; exit 2; }
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/tessera-soak.XXXXXX)
mkdir -p "$OUT"
TEMPLATE=$ROOT/tests/server/node/chatml.jinja

"$BIN" serve -m "$MODEL" --host 127.0.0.1 --port 0 --threads 2 --no-webui --chat-template "$TEMPLATE" \
  2>"$OUT/server.log" &
SERVER=$!
cleanup() { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; }
trap cleanup EXIT
PORT=""
for _ in $(seq 300); do
  PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$OUT/server.log" 2>/dev/null)
  [ -n "$PORT" ] && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { echo "soak.sh: tessera serve did not start" >&2; exit 1; }
URL=http://127.0.0.1:$PORT
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER/status" 2>/dev/null; }

LONG=$(printf 'Once upon a time there was a little dog named Max who loved to run in the park. %.0s' $(seq 16))
DEADLINE=$(( $(date +%s) + MINUTES * 60 ))

# worker ID: loops over the kinds until the deadline; one line per request in $OUT/w<ID>.log: kind status curl_rc.
worker() {
  local id=$1 i=0 kinds=(stream cancel n3 stream long chat bad stream) log=$OUT/w$1.log
  while [ "$(date +%s)" -lt "$DEADLINE" ]; do
    local kind=${kinds[$(( (i + id) % ${#kinds[@]} ))]} body="" path=/v1/completions max=60 code rc
    i=$((i + 1))
    case $kind in
      stream) body="{\"prompt\":\"Once upon a time, in a small town, $((i % 7))\",\"max_tokens\":$((8 + i % 57)),\"stream\":true}" ;;
      cancel) body='{"prompt":"The little girl","max_tokens":400,"ignore_eos":true,"stream":true}'; max=0.2 ;;
      n3) body="{\"prompt\":\"Lily and Ben\",\"max_tokens\":12,\"n\":3,\"seed\":$i}" ;;
      long) body="{\"prompt\":\"$LONG\",\"max_tokens\":16}" ;;
      chat) path=/v1/chat/completions
            body="{\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a story $((i % 5))\"}],\"max_tokens\":24}" ;;
      bad) case $((i % 3)) in
             0) body='{"prompt": "x", ' ;;
             1) body='{"prompt":"x","model":"no-such-model"}' ;;
             *) body='{"prompt":"x","max_tokens":100000}' ;;
           esac ;;
    esac
    code=$(curl -sS -N -o /dev/null -w '%{http_code}' --max-time "$max" -H 'Content-Type: application/json' \
      -d "$body" "$URL$path" 2>/dev/null)
    rc=$?
    echo "$kind $code $rc" >>"$log"
  done
}

echo "soak: $WORKERS workers for $MINUTES min against $URL (pid $SERVER); output in $OUT"
echo "t_s,rss_kib" >"$OUT/rss.csv"
T0=$(date +%s)
echo "0,$(rss_kib)" >>"$OUT/rss.csv"
PIDS=()
for w in $(seq "$WORKERS"); do worker "$w" & PIDS+=($!); done
while [ "$(date +%s)" -lt "$DEADLINE" ]; do
  sleep 10
  kill -0 "$SERVER" 2>/dev/null || { echo "FAIL: the server exited during the soak" >&2; exit 1; }
  echo "$(( $(date +%s) - T0 )),$(rss_kib)" >>"$OUT/rss.csv"
done
wait "${PIDS[@]}"

FAIL=0
fail() { echo "FAIL: $*"; FAIL=1; }
# Client side: every answer matches its kind.
cat "$OUT"/w*.log >"$OUT/requests.log"
awk '
  { n[$1]++ }
  $2 == "429" { shed++; next }
  $1 == "cancel" && ($3 == 28 || $2 == "200") { ok[$1]++; next }
  $1 == "bad" && $2 ~ /^4/ { ok[$1]++; next }
  $1 != "bad" && $2 == "200" && $3 == 0 { ok[$1]++; next }
  { bad++; if (bad <= 10) print "unexpected answer: " $0 > "/dev/stderr" }
  END {
    for (k in n) printf "  %-7s %6d requests, %6d as expected\n", k, n[k], ok[k]
    printf "  429s: %d, unexpected: %d\n", shed, bad
    exit bad > 0
  }' "$OUT/requests.log" || fail "unexpected answers (see above)"

# Server side: idle, every block and request accounted for.
metric() { awk -v k="$1" '$1 == k {print $2}' "$OUT/metrics.txt"; }
for _ in $(seq 100); do
  curl -sS --max-time 5 "$URL/metrics" >"$OUT/metrics.txt"
  [ "$(metric tessera_num_requests_running)" = 0 ] && [ "$(metric tessera_num_requests_waiting)" = 0 ] &&
    [ "$(metric tessera_kv_cache_usage_perc)" = 0 ] && break
  sleep 0.1
done
[ "$(metric tessera_num_requests_running)" = 0 ] || fail "requests still running: $(metric tessera_num_requests_running)"
[ "$(metric tessera_num_requests_waiting)" = 0 ] || fail "requests still waiting: $(metric tessera_num_requests_waiting)"
[ "$(metric tessera_kv_cache_usage_perc)" = 0 ] || fail "KV blocks still in use: $(metric tessera_kv_cache_usage_perc)"
[ "$(metric tessera_request_failed_total)" = 0 ] || fail "failed requests: $(metric tessera_request_failed_total)"
FIVE=$(awk '$1 == "tessera_http_errors_total{class=\"5xx\"}" {print $2}' "$OUT/metrics.txt")
[ "${FIVE:-0}" = 0 ] || fail "5xx answers: $FIVE"
grep -E '^tessera_(request_success_total|request_aborted_total|prefix_cache_(queries|hits)_total|num_preemptions_total)' \
  "$OUT/metrics.txt" | sed 's/^/  /'
echo "$(( $(date +%s) - T0 )),$(rss_kib)" >>"$OUT/rss.csv"

# RSS: start, end, and the least-squares slope over the second half.
awk -F, 'NR > 1 { t[NR] = $1; r[NR] = $2; n = NR }
  END {
    printf "  RSS: start %d KiB, end %d KiB, max %d KiB\n", r[2], r[n], max_r(r, n)
    h = int((n + 2) / 2); k = 0; st = sr = stt = str = 0
    for (i = h; i <= n; ++i) { k++; st += t[i]; sr += r[i]; stt += t[i] * t[i]; str += t[i] * r[i] }
    if (k >= 2 && k * stt != st * st) printf "  RSS slope over the second half: %.1f KiB/min (%d samples)\n",
                                              60 * (k * str - st * sr) / (k * stt - st * st), k
  }
  function max_r(r, n,   i, m) { m = 0; for (i = 2; i <= n; ++i) if (r[i] > m) m = r[i]; return m }' "$OUT/rss.csv"
[ "$FAIL" = 0 ] && echo "soak: PASS" || echo "soak: FAIL"
exit "$FAIL"
