#!/usr/bin/env bash
# scripts/bench-vs-llamacpp.sh without llama.cpp: its usage errors (exit 2),
# an absent or wrong llama-bench (exit 1, one clear line), and a full run
# against a stand-in llama-bench that prints llama-bench's CSV with fixed
# figures, so the table's tessera half is real and the ratios can be checked.
#   bench_vs_llamacpp_test.sh SCRIPT TESSERA DEFAULT_SHARED_DIR
# (the model is $TESSERA_SHARED_DIR/models/stories260K.gguf, as for the other tests)
set -uo pipefail
script=$1 tessera=$2
model=${TESSERA_SHARED_DIR:-$3}/models/stories260K.gguf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # description want_rc got_rc stderr_file pattern
  if [[ "$3" != "$2" ]] || ! grep -q -- "$5" "$4"; then
    echo "FAIL: $1 (exit $3, want $2; stderr: $(cat "$4"))"
    fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}

"$script" >/dev/null 2>"$tmp/e"; check "no arguments" 2 $? "$tmp/e" "usage:"
"$script" --help >"$tmp/o" 2>/dev/null; check "--help (exit 0, the header on stdout)" 0 $? "$tmp/o" "LLAMA_CPP is a llama.cpp build directory"
"$script" "$tmp" >/dev/null 2>"$tmp/e"; check "no model" 2 $? "$tmp/e" "usage:"
"$script" -t x "$tmp" "$model" >/dev/null 2>"$tmp/e"; check "bad -t" 2 $? "$tmp/e" "-t must be a positive integer"
"$script" -r 0 "$tmp" "$model" >/dev/null 2>"$tmp/e"; check "bad -r" 2 $? "$tmp/e" "-r must be a positive integer"
"$script" -n 1 "$tmp" "$model" >/dev/null 2>"$tmp/e"; check "-n 1" 2 $? "$tmp/e" "at least 2"
"$script" --bogus "$tmp" "$model" >/dev/null 2>"$tmp/e"; check "unknown option" 2 $? "$tmp/e" "unknown option --bogus"
"$script" -p >/dev/null 2>"$tmp/e"; check "option without value" 2 $? "$tmp/e" "needs a value"
"$script" --tessera "$tessera" "$tmp/absent" "$model" >/dev/null 2>"$tmp/e"
check "absent llama.cpp build" 1 $? "$tmp/e" "no llama-bench executable at $tmp/absent"
"$script" --tessera "$tessera" "$tmp" "$model" >/dev/null 2>"$tmp/e"
check "directory without llama-bench" 1 $? "$tmp/e" "no llama-bench executable"

mkdir -p "$tmp/build/bin"
fake="$tmp/build/bin/llama-bench"
printf '#!/bin/sh\necho "this is not llama-bench"\n' >"$fake"
chmod +x "$fake"
"$script" --tessera "$tessera" -r 1 -p 8 -n 4 "$tmp/build" "$model" >/dev/null 2>"$tmp/e"
check "a program that is not llama-bench" 1 $? "$tmp/e" "could not read llama-bench's output"
"$script" --tessera "$tmp/none" "$tmp/build" "$model" >/dev/null 2>"$tmp/e"
check "absent tessera" 1 $? "$tmp/e" "no tessera executable"
"$script" --tessera "$tessera" "$tmp/build" "$tmp/none.gguf" >/dev/null 2>"$tmp/e"
check "absent model" 1 $? "$tmp/e" "model not found"

# A stand-in llama-bench: llama-bench's CSV (every field quoted), 50 tokens/s
# for decode (-p 0) and 400 for prefill, and it records its arguments.
cat >"$fake" <<'FAKE'
#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
p=0
while [ $# -gt 0 ]; do [ "$1" = "-p" ] && p=$2; shift; done
echo '"build_commit","cpu_info","model_filename","n_threads","n_prompt","n_gen","avg_ns","avg_ts","stddev_ts"'
if [ "$p" = 0 ]; then echo '"c392e509","AMD, EPYC","m.gguf","2","0","4","1","50.000000","0.1"'
else echo '"c392e509","AMD, EPYC","m.gguf","2","8","0","1","400.000000","0.1"'; fi
FAKE
chmod +x "$fake"
"$script" --tessera "$tessera" -t 1 -r 2 -p 8 -n 4 "$tmp/build" "$model" >"$tmp/o" 2>"$tmp/e"
rc=$?
check "full run with a stand-in llama-bench" 0 $rc "$tmp/e" "round 2/2"
row=$(grep "| $(basename "$model")" "$tmp/o")
# The ratios are tessera's own figures over 50 and 400.
if ! awk -F'|' '{ td = $3 + 0; ld = $4 + 0; rd = $5 + 0; tp = $6 + 0; lp = $7 + 0; rp = $8 + 0
      ok = td > 0 && tp > 0 && ld == 50 && lp == 400 && (rd - td / 50) ^ 2 < 1e-4 && (rp - tp / 400) ^ 2 < 1e-4
      exit ok ? 0 : 1 }' <<<"$row"; then
  echo "FAIL: table row: '$row'"; fails=$((fails + 1))
else
  echo "ok: table row $row"
fi
# Four llama-bench calls (decode and prefill, two rounds) with the options passed through.
if [[ $(grep -c -- "-t 1 -p 0 -n 4 -r 1 -o csv" "$tmp/build/bin/calls") != 2 ||
      $(grep -c -- "-t 1 -p 8 -n 0 -r 1 -o csv" "$tmp/build/bin/calls") != 2 ]]; then
  echo "FAIL: llama-bench calls: $(cat "$tmp/build/bin/calls")"; fails=$((fails + 1))
else
  echo "ok: llama-bench called as -p 0 -n 4 and -p 8 -n 0, twice each"
fi
exit $((fails > 0))
