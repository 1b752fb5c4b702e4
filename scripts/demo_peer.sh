#!/usr/bin/env bash
# `make demo`'s peer: gensim's skip-gram (apps/bench/peers/gensim_word2vec.py) on the same
# Brown tokens with the demo's settings, scored on the same word-similarity set, so that
# Darcy's score has the peer's beside it. Prints one line; says so and exits 0 when gensim is
# not installed. Usage: scripts/demo_peer.sh BUILD_DIR [SIMILARITY_FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: demo_peer.sh BUILD_DIR [SIMILARITY_FILE]}
set_file=${2:-$root/apps/word2vec/data/brown-relatedness.tsv}
darcy="$build/apps/darcy"
work="$build/demo-peer"
if ! /usr/bin/python3 -c 'import gensim' 2>/dev/null; then
  echo "peer: gensim is not installed (make deps installs python3-gensim): no peer score"
  exit 0
fi
mkdir -p "$work"
"$darcy" word2vec prepare --corpus "$build/data/brown" --format brown --out "$work/brown.txt" >/dev/null
/usr/bin/python3 "$root/apps/bench/peers/gensim_word2vec.py" "$work/brown.txt" "$work/gensim.bin" 2 5
rho=$("$darcy" word2vec eval --vectors "$work/gensim.bin" --similarity "$set_file" --json | tail -1 |
  /usr/bin/python3 -c 'import json, sys; print(round(json.load(sys.stdin)["brown-relatedness"], 4))')
echo "peer: gensim on the same tokens and settings, similarity $(basename "$set_file"): spearman $rho"
