#!/usr/bin/env bash
# `tessera serve` under `mpirun -np 2 ... --tensor-parallel-size 2` (issue #15):
#  1. a greedy completion equals the single-process `tessera run` output;
#  2. a worker killed with SIGKILL while streams are in flight ends the whole
#     run within 20 s with a non-zero exit, and every client's stream ends
#     (no stall) without `data: [DONE]`;
#  3. a model file missing on one rank (an MPMD launch, as on a host without
#     the file) is one error line from rank 0 and a non-zero exit;
#  4. ranks given different models: one line, no hang;
#  5. a rank started without the parallel flags (MPMD): one line, exit 2, no hang;
#  6. ranks that see different TESSERA_PP_MICRO_BATCH_ROWS: one line, exit 2;
#  7. `--pipeline-parallel-size 2` through the issue/complete step loop: 16 concurrent
#     completions of mixed lengths, greedy and seeded, equal a single-process
#     server's.
# Run by ctest: parallel_serve_test.sh TESSERA_BIN MPIEXEC MODEL. Exit 77 = skipped (no model and
# TESSERA_SKIP_MISSING_DATA=1).
set -euo pipefail
BIN=$1
MPIEXEC=$2
. "$(dirname "$0")/../stories_model.sh"
stories_model "$3"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI=("$MPIEXEC" --oversubscribe -q)
WORK=$(mktemp -d)
MPI_PID=""
cleanup() {
  if [ -n "$MPI_PID" ] && kill -0 "$MPI_PID" 2>/dev/null; then kill -KILL "$MPI_PID" 2>/dev/null || true; fi
  pkill -KILL -f "tessera-parallel-serve-test-$$" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
FAILURES=0
fail() { echo "FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }
ok() { echo "ok: $*"; }

# The ranks carry a tag in their command line (--served-model-name) so the test finds them.
TAG=tessera-parallel-serve-test-$$
"${MPI[@]}" -np 2 "$BIN" serve -m "$MODEL" --host 127.0.0.1 --port 0 -t 1 --tensor-parallel-size 2 \
  --served-model-name "$TAG" 2>"$WORK/server.log" &
MPI_PID=$!
PORT=""
for _ in $(seq 300); do
  PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$WORK/server.log")
  [ -n "$PORT" ] && break
  kill -0 "$MPI_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; echo "FAIL: server exited before listening" >&2; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { cat "$WORK/server.log" >&2; echo "FAIL: server did not listen within 30 s" >&2; exit 1; }
URL=http://127.0.0.1:$PORT/v1/completions

# 1. Greedy completion = the single-process run.
want=$("$BIN" run -m "$MODEL" -p "Once upon a time" -n 24 --temp 0 -t 1 2>/dev/null)
got=$(curl -sS -H "Content-Type: application/json" \
  -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0}' "$URL" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
if [ "$got" = "$want" ]; then ok "greedy completion under T = 2 equals the single-process run"; else
  fail "greedy completion: got '$got', want '$want'"; fi

# 2. Kill a worker while 8 long streams run.
for i in $(seq 8); do
  curl -sS -N -m 60 -H "Content-Type: application/json" \
    -d "{\"prompt\":\"Once upon a time $i\",\"max_tokens\":1900,\"ignore_eos\":true,\"stream\":true}" \
    "$URL" >"$WORK/stream$i" 2>/dev/null &
  eval "CURL$i=\$!"
done
for _ in $(seq 200); do
  [ -s "$WORK/stream1" ] && break
  sleep 0.05
done
worker=""
for pid in $(pgrep -f "$TAG"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then worker=$pid; fi
done
[ -n "$worker" ] || fail "no rank-1 process found"
start=$(date +%s)
kill -KILL "$worker"
rc=0
for _ in $(seq 200); do kill -0 "$MPI_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$MPI_PID" 2>/dev/null; then fail "mpirun still running 20 s after the worker was killed"; else
  wait "$MPI_PID" || rc=$?
  MPI_PID=""
  if [ "$rc" -ne 0 ]; then ok "the run ended with exit $rc $(($(date +%s) - start)) s after the worker died"; else
    fail "the run exited 0 after a worker died"; fi
fi
cut=0
for i in $(seq 8); do
  eval "pid=\$CURL$i"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then fail "stream $i still open 10 s after the server ended"; kill "$pid"; fi
  grep -q '^data: \[DONE\]' "$WORK/stream$i" || cut=$((cut + 1))
done
if [ "$cut" -gt 0 ]; then ok "$cut of 8 streams ended without [DONE] (the rest had finished)"; else
  fail "every stream had finished before the kill: the fault was not tested mid-stream"; fi

# expect_one_error WHAT RC PATTERN MPIRUN_ARGS...: the launch ends within 60 s
# with exit RC ("nonzero": any but 0 and timeout's 124) and exactly one
# "tessera: error" line, matching PATTERN.
expect_one_error() {
  local what=$1 want=$2 pattern=$3 out rc errors
  shift 3
  set +e
  out=$(timeout 60 "${MPI[@]}" "$@" 2>&1)
  rc=$?
  set -e
  errors=$(grep -c '^tessera: error' <<<"$out" || true)
  if { [ "$want" = nonzero ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || [ "$rc" = "$want" ]; } &&
    [ "$errors" -eq 1 ] && grep -q "^tessera: error: $pattern" <<<"$out"; then
    ok "$what: exit $rc, one line: $(grep '^tessera: error' <<<"$out")"
  else
    fail "$what: exit $rc (124: hung), output: $out"
  fi
}

# 3. A model missing on one rank.
expect_one_error "missing model on rank 1" nonzero "rank 1: .*missing.gguf" \
  -np 1 "$BIN" run -m "$MODEL" -p hi -n 2 --tensor-parallel-size 2 : \
  -np 1 "$BIN" run -m "$WORK/missing.gguf" -p hi -n 2 --tensor-parallel-size 2

# 4. Ranks given different models (rank 1's is a Hugging Face fixture of another shape).
OTHER=$(dirname "$(dirname "$MODEL")")/fixtures/hf/llama_gqa
if [ -d "$OTHER" ]; then
  expect_one_error "different models on the ranks" nonzero "rank 1: .*is not rank 0's model" \
    -np 1 "$BIN" run -m "$MODEL" -p hi -n 2 --tensor-parallel-size 2 : \
    -np 1 "$BIN" run -m "$OTHER" -p hi -n 2 --tensor-parallel-size 2
fi

# 5. A rank started without the parallel flags: every rank joins MPI and the layouts are compared.
expect_one_error "a rank without the parallel flags" 2 "the ranks were started with different parallel flags" \
  -np 1 "$BIN" run -m "$MODEL" -p hi -n 2 --tensor-parallel-size 2 : -np 1 "$BIN" run -m "$MODEL" -p hi -n 2

# 6. The pipeline micro-batch cut must be the same on every rank.
expect_one_error "ranks with different micro-batch settings" 2 "the ranks see different TESSERA_PP_MICRO_BATCH_ROWS" \
  -np 1 -x TESSERA_PP_MICRO_BATCH_ROWS=0 "$BIN" run -m "$MODEL" -p hi -n 2 --pipeline-parallel-size 2 : \
  -np 1 -x TESSERA_PP_MICRO_BATCH_ROWS=32 "$BIN" run -m "$MODEL" -p hi -n 2 --pipeline-parallel-size 2

# 7. Steps in flight under P = 2: 16 concurrent requests against a single-process server's answers.
# start_server LOG FLAGS LAUNCH...: `LAUNCH serve ... FLAGS` in the background; sets SERVER_PID and SERVER_URL.
start_server() {
  local log=$1 flags=$2 port=""
  shift 2
  : >"$log"  # before the background job opens it: sed of a missing file would end the script (set -e)
  # shellcheck disable=SC2086 # FLAGS are words
  "$@" serve -m "$MODEL" --host 127.0.0.1 --port 0 -t 1 --served-model-name "$TAG" $flags 2>"$log" &
  SERVER_PID=$!
  for _ in $(seq 300); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  SERVER_URL=http://127.0.0.1:$port/v1/completions
  [ -n "$port" ]
}
# sixteen URL OUT: 16 requests at once; their texts, in request order, one JSON line.
sixteen() {
  python3 - "$1" >"$2" <<'PY'
import json, sys, threading, urllib.request
url, out = sys.argv[1], [None] * 16
def one(i):
    body = {"prompt": "Once upon a time %d" % (i * 7), "max_tokens": 4 + (i * 11) % 37,
            "temperature": 0 if i % 2 == 0 else 0.9, "seed": 100 + i, "ignore_eos": True}
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    out[i] = json.load(urllib.request.urlopen(req, timeout=120))["choices"][0]["text"]
threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(out))
PY
}
if start_server "$WORK/solo.log" "" "$BIN"; then
  sixteen "$SERVER_URL" "$WORK/solo.json" || fail "requests to the single-process server"
  kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true
else fail "single-process server did not start: $(cat "$WORK/solo.log")"; fi
if start_server "$WORK/pp.log" "--pipeline-parallel-size 2" "${MPI[@]}" -np 2 "$BIN"; then
  MPI_PID=$SERVER_PID
  sixteen "$SERVER_URL" "$WORK/pp.json" || fail "requests to the P = 2 server"
  kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true
  MPI_PID=""
  if [ -s "$WORK/solo.json" ] && cmp -s "$WORK/solo.json" "$WORK/pp.json"; then
    ok "16 concurrent completions under P = 2 equal the single-process server's"
  else fail "P = 2 completions differ: $(cat "$WORK/pp.json") against $(cat "$WORK/solo.json")"; fi
else fail "P = 2 server did not start: $(cat "$WORK/pp.log")"; fi

[ "$FAILURES" -eq 0 ] || { echo "$FAILURES failure(s)"; exit 1; }
echo "all parallel serve checks passed"
