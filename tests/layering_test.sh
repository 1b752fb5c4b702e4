#!/usr/bin/env bash
# Checks the layering rule of DESIGN.md: a layer includes only layers below it. messages/ is
# the protocol vocabulary that every layer may use, and it uses none. Fails naming each breach.
set -euo pipefail
root=${1:-.}
declare -A allowed=(
  [apps]="apps ops actors runtime messages stores compute gpu"
  [ops]="ops actors runtime messages stores compute gpu"
  [actors]="actors runtime messages stores compute gpu"
  [runtime]="runtime messages stores compute gpu"
  [stores]="stores messages compute gpu"
  [compute]="compute messages gpu"
  [gpu]="gpu"
  [messages]="messages"
)
status=0
for layer in "${!allowed[@]}"; do
  [[ -d "$root/$layer" ]] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -n 's/.*#include "\([a-z_]*\)\/.*/\1/p' <<<"$line")
    [[ -n "$target" ]] || continue
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      echo "layering: $file includes $target/ (from $layer/)"
      status=1
    fi
  done < <(grep -rn '#include "' "$root/$layer" --include='*.hpp' --include='*.cpp' --include='*.cu' || true)
done
[[ $status -eq 0 ]] && echo "layering: ok"
exit $status
