#!/usr/bin/env bash
# Word2vec under message loss: the same cluster run twice on three `darcy node` processes on
# 127.0.0.1, once clean (the peer) and once with `darcy chaos disrupt` dropping a fraction of
# the messages sent to shard 0 from the moment it registers to the end of the run. Prints one
# row per run, then {"bench":"word2vec_chaos","metrics":{...}} with the slowdown ratio and the
# WordSim-353 difference.
# Usage: apps/bench/word2vec_chaos.sh   (env: DARCY, DATA, CORPUS, DROP, RETRY_MS, EPOCHS)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
darcy=${DARCY:-$root/build/apps/darcy}
data=${DATA:-$root/../shared/data}
corpus=${CORPUS:-$data/text/wikitext-2.test.txt}
drop=${DROP:-0.05}
retry_ms=${RETRY_MS:-500}
epochs=${EPOCHS:-5}
work=$(mktemp -d)
seed=$work/cluster
cleanup() { "$darcy" cluster down --dir "$seed" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
for f in "$corpus" "$data/eval/wordsim353.tsv"; do
  [ -f "$f" ] || { echo "word2vec_chaos: $f is missing (DATA, CORPUS)" >&2; exit 1; }
done
"$darcy" cluster up --nodes 3 --dir "$seed" --threads 1 --chaos >&2

# run NAME DISRUPT(0|1): trains, prints "NAME seconds wordsim retried". The disruption ends
# with the run's shards; every dropped request is among the retried ones.
run() {
  local name=$1 disrupt=$2 start end
  start=$(date +%s.%N)
  "$darcy" word2vec train --corpus "$corpus" --cluster "$seed" --shards 1 --dim 50 \
    --epochs "$epochs" --threads 2 --batch-words 2000 --checkpoint-every 10 \
    --shard-retry-ms "$retry_ms" --similarity "$data/eval/wordsim353.tsv" --quiet \
    > "$work/$name.out" 2>&1 &
  local driver=$!
  if [ "$disrupt" = 1 ]; then
    local shard=""
    while [ -z "$shard" ] && kill -0 "$driver" 2>/dev/null; do
      shard=$("$darcy" cluster status --seed "$seed" | grep -o '[^ ]*\.shard\.0' | head -1 || true)
      [ -n "$shard" ] || sleep 0.05
    done
    "$darcy" chaos disrupt "$shard" --drop "$drop" --rng-seed 7 --seed "$seed" >/dev/null
  fi
  if ! wait "$driver"; then
    echo "word2vec_chaos: the $name run failed:" >&2
    cat "$work/$name.out" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  local wordsim retried
  wordsim=$(grep -i "wordsim353" "$work/$name.out" | grep -o 'spearman[^0-9-]*[-0-9.]*' |
            grep -o '[-0-9.]*$' | head -1)
  retried=$(sed -n 's/.*sent again after a timeout: \([0-9]*\).*/\1/p' "$work/$name.out")
  echo "$name $(echo "$end - $start" | bc) ${wordsim:-nan} ${retried:-0}"
}

clean=$(run clean 0)
disrupted=$(run disrupted 1)
printf '%-10s %8s %9s %8s\n' run seconds wordsim retried
for r in "$clean" "$disrupted"; do printf '%-10s %8.3f %9s %8s\n' $r; done
read -r _ cs cw _ <<< "$clean"
read -r _ ds dw dr <<< "$disrupted"
printf '{"bench":"word2vec_chaos","metrics":{"drop":%s,"shard_retry_ms":%s,"clean_s":%.3f,"disrupted_s":%.3f,"slowdown":%.2f,"wordsim_clean":%s,"wordsim_disrupted":%s,"wordsim_delta":%.4f,"retried":%s}}\n' \
  "$drop" "$retry_ms" "$cs" "$ds" "$(echo "$ds / $cs" | bc -l)" "$cw" "$dw" \
  "$(echo "$dw - $cw" | bc -l)" "$dr"
