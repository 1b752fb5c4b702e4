#!/usr/bin/env bash
# The cost of TLS between nodes: `darcy moe train` with its experts on a 3-node local cluster
# (`darcy cluster up`), run RUNS times on a cluster with plain TCP (the peer) and RUNS times on
# one with TLS (a test CA from scripts/make_tls.sh). Every step's rows cross TCP to the experts
# and back, in the forward and the backward. Prints each run's tokens/s, then
# {"bench":"tls","metrics":{...}} with each median and tls_vs_plain, their ratio.
# Usage: apps/bench/tls.sh   (env: DARCY, RUNS, DIM, BATCH, STEPS)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
darcy=${DARCY:-$root/build/apps/darcy}
runs=${RUNS:-7}
dim=${DIM:-256}
batch=${BATCH:-4096}
steps=${STEPS:-20}
work=$(mktemp -d)
# Every cluster started, one line "DIR FLAGS..." each: they are stopped at exit.
touch "$work/clusters"
cleanup() {
  while read -r dir flags; do
    # shellcheck disable=SC2086
    "$darcy" $flags cluster down --dir "$dir" >/dev/null 2>&1 || true
  done <"$work/clusters"
  rm -rf "$work"
}
trap cleanup EXIT
"$root/scripts/make_tls.sh" "$work/ca" node >/dev/null

# setting NAME FLAGS...: starts a cluster with FLAGS, trains RUNS times, prints "NAME TOKENS_PER_S".
setting() {
  local name=$1 dir=$work/$1
  shift
  "$darcy" "$@" cluster up --nodes 3 --dir "$dir" >"$work/$name.up" 2>&1
  echo "$dir $*" >>"$work/clusters"
  for r in $(seq 1 "$runs"); do
    "$darcy" "$@" moe train --cluster "$dir/cluster.json" --checkpoint "$work/$name-$r" \
      --dim "$dim" --batch "$batch" --steps "$steps" --checkpoint-every 100000 --seed 1 --quiet \
      >"$work/$name.out"
    python3 -c 'import json,sys; print(sys.argv[1], json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])["tokens_per_second"])' \
      "$name" "$work/$name.out"
  done
}
{
  setting plain
  setting tls --tls-dir "$work/ca/node"
} | tee "$work/runs.txt"
python3 - "$work/runs.txt" "$runs" <<'PY'
import json, statistics, sys
rates = {}
for line in open(sys.argv[1]):
    name, value = line.split()
    rates.setdefault(name, []).append(float(value))
plain, tls = statistics.median(rates["plain"]), statistics.median(rates["tls"])
print(json.dumps({"bench": "tls", "metrics": {"plain_tokens_per_s": plain, "tls_tokens_per_s": tls,
                                              "tls_vs_plain": tls / plain, "runs": int(sys.argv[2]),
                                              "cores": __import__("os").cpu_count()}}))
PY
