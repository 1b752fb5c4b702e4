#!/usr/bin/env bash
# Checks that every C++ and CUDA file of the tree is formatted by the root's .clang-format
# (`make deps` installs clang-format), naming each file that is not; the fix is
# `clang-format -i FILE`. Usage: format_test.sh ROOT
set -euo pipefail
root=${1:-.}
command -v clang-format >/dev/null || { echo "format: clang-format is missing (apt-get install clang-format)"; exit 1; }
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' -o \
                         -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) -print)
fi
# One clang-format process for the whole tree; its warnings name each file and line.
if report=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  echo "format: ok (${#files[@]} files)"
  exit 0
fi
grep -oE '^[^:]+:[0-9]+:[0-9]+: (error|warning)' <<<"$report" | cut -d: -f1 | sort -u |
  while read -r f; do echo "format: $f is not formatted (clang-format -i $f)"; done
exit 1
