#!/usr/bin/env bash
# `darcy serve` under load: the 1M-item WALS export in 4 shard servers, one per `darcy node`
# process on 127.0.0.1, and its root behind HTTP, loaded by wrk at batch 1 with the bodies of
# apps/bench/serve/topk.lua, with CONNECTIONS (64: enough to keep the 2 cores busy, as the
# peer is) and again with 16. The peer, in the same run: the same export's indexes called in
# process (`darcy-bench serve-direct`) on the same threads. Then a wrk run with shard 0 behind
# `darcy chaos disrupt --delay`: answers past the deadline come back flagged partial.
# Last line: {"bench":"serve","metrics":{...}}.
# Usage: apps/bench/serve.sh   (env: DARCY, DARCY_BENCH (darcy-bench, by default beside DARCY), MODEL (a `wals train --out` dir; default: trains
#        the 1M x 1M synthetic matrix), SECONDS_RUN, DIRECT_SECONDS, CONNECTIONS, DEADLINE_MS,
#        CHAOS_DELAY_MS, SERVE_THREADS (actor and HTTP threads of `darcy serve`), SERVE_ARGS
#        (more options of `darcy serve`, such as --shard-batches 0))
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
darcy=${DARCY:-$root/build/apps/darcy}
bench=${DARCY_BENCH:-$(dirname "$darcy")/darcy-bench}
seconds=${SECONDS_RUN:-20}
direct_seconds=${DIRECT_SECONDS:-10}
connections=${CONNECTIONS:-64}
deadline_ms=${DEADLINE_MS:-200}
chaos_delay_ms=${CHAOS_DELAY_MS:-1000}
serve_threads=${SERVE_THREADS:-1}
for tool in wrk curl bc; do
  command -v $tool >/dev/null || { echo "serve bench: $tool is missing (make deps installs it)" >&2; exit 1; }
done
work=$(mktemp -d)
cluster=$work/cluster
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  "$darcy" cluster down --dir "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

model=${MODEL:-}
if [ -z "$model" ]; then
  model=$work/model
  "$darcy" wals train --synthetic-rows 1000000 --synthetic-cols 1000000 \
    --synthetic-nnz 50000000 --dim 64 --iters 8 --quiet --out "$model" >&2
fi
"$darcy" wals export --model "$model" --out "$work/exports/wals1m" --shards 4 --threads 2 >&2
users=$(sed -n 's/^users //p' "$model/meta.txt")

direct=$("$bench" serve-direct --model "$work/exports/wals1m" --threads 2 \
           --seconds "$direct_seconds" | tail -1)
direct_qps=$(echo "$direct" | sed 's/.*"direct_qps":\([0-9.]*\).*/\1/')

# Four node processes (the seed and three members), with chaos gates for the disrupted run.
"$darcy" cluster up --nodes 4 --dir "$cluster" --threads 1 --chaos >&2
"$darcy" serve --exports "$work/exports" --listen 127.0.0.1:0 --cluster "$cluster" \
  --http-threads "$serve_threads" --threads "$serve_threads" ${SERVE_ARGS:-} > "$work/serve.out" 2> "$work/serve.log" & pids+=($!)
# wait_for WHAT COMMAND...: polls COMMAND every 0.1 s for a minute.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do
    "$@" && return 0
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/serve.log" >&2; echo "serve bench: darcy serve exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "serve bench: $what within a minute" >&2
  exit 1
}
wait_for "darcy serve did not listen" grep -q "listening on" "$work/serve.out"
http=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/serve.out")
available() { curl -s "$http/v1/models/wals1m" | grep -q '"state":"available"'; }
wait_for "the model did not load" available

# run CONNECTIONS ALLOW_PARTIAL: one wrk run; prints its JSON line.
run() {
  MODEL=wals1m USERS=$users DEADLINE_MS=$deadline_ms ALLOW_PARTIAL=$2 \
    wrk -t 2 -c "$1" -d "${seconds}s" --timeout 5s \
    -s "$root/apps/bench/serve/topk.lua" "$http" | tail -1
}
clean=$(run "$connections" false)
clean16=$(run 16 false)
shard=$(curl -s "$http/v1/models/wals1m" | grep -o '"version":"[0-9]*"' | head -1 |
        sed 's/.*"\([0-9]*\)"/serving.wals1m.\1.shard.0/')
"$darcy" chaos disrupt "$shard" --delay 0.05 --delay-ms "$chaos_delay_ms" --rng-seed 7 \
  --seed "$cluster" >&2
chaos=$(run "$connections" true)
"$darcy" chaos heal "$shard" --seed "$cluster" >&2

field() { echo "$1" | sed "s/.*\"$2\": \([0-9.]*\).*/\1/"; }
echo "direct: $direct"
echo "clean:  $clean ($connections connections)"
echo "clean16: $clean16 (16 connections)"
echo "chaos:  $chaos (shard 0 delays 5% of its messages by ${chaos_delay_ms} ms)"
serve_qps=$(field "$clean" qps)
ratio=$(printf "%.3f" "$(echo "scale=6; $serve_qps / $direct_qps" | bc)")
failed=$(( $(field "$clean" failed) + $(field "$clean" socket_errors) + $(field "$clean16" failed) + $(field "$clean16" socket_errors) ))
ratio16=$(printf "%.3f" "$(echo "scale=6; $(field "$clean16" qps) / $direct_qps" | bc)")
echo "{\"bench\":\"serve\",\"metrics\":{\"serve_vs_direct\":$ratio,\"serve_qps\":$serve_qps,\"serve_p50_ms\":$(field "$clean" p50_ms),\"serve_p99_ms\":$(field "$clean" p99_ms),\"failed_requests\":$failed,\"direct_qps\":$direct_qps,\"connections\":$connections,\"serve_vs_direct_c16\":$ratio16,\"serve_p99_ms_c16\":$(field "$clean16" p99_ms),\"chaos_p99_ms\":$(field "$chaos" p99_ms),\"chaos_partial\":$(field "$chaos" partial),\"chaos_failed\":$(( $(field "$chaos" failed) + $(field "$chaos" socket_errors) )),\"deadline_ms\":$deadline_ms,\"cores\":$(nproc)}}"
