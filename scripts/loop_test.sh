#!/usr/bin/env bash
# Runs one test of a GoogleTest binary N times in a row beside `stress --cpu CPUS` (Debian's
# stress; CPUS 0: no load), as a flaky test is hunted: prints a line per run, keeps the output
# of each failed run under OUT, and ends with "passed P of N".
# Usage: scripts/loop_test.sh BINARY TEST N [CPUS (default 2)] [OUT (default /tmp/loop_test)]
set -euo pipefail
binary=${1:?usage: loop_test.sh BINARY TEST N [CPUS] [OUT]}
test_name=${2:?usage: loop_test.sh BINARY TEST N [CPUS] [OUT]}
runs=${3:?usage: loop_test.sh BINARY TEST N [CPUS] [OUT]}
cpus=${4:-2}
out=${5:-/tmp/loop_test}
mkdir -p "$out"
stress_pid=""
if [ "$cpus" -gt 0 ]; then
  command -v stress >/dev/null || { echo "loop_test: stress is missing (apt-get install stress)" >&2; exit 1; }
  stress --cpu "$cpus" >/dev/null 2>&1 & stress_pid=$!
fi
cleanup() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
passed=0
for i in $(seq 1 "$runs"); do
  start=$(date +%s.%N)
  if "$binary" --gtest_filter="$test_name" >"$out/run-$i.log" 2>&1; then
    passed=$((passed + 1))
    result=passed
    rm -f "$out/run-$i.log"
  else
    result="FAILED (log: $out/run-$i.log)"
  fi
  printf 'run %d: %s in %.1f s\n' "$i" "$result" "$(echo "$(date +%s.%N) - $start" | bc)"
done
echo "passed $passed of $runs"
