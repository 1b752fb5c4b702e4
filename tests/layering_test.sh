#!/usr/bin/env bash
# Checks the layering rules of docs/architecture.md, naming each breach:
# 1. A layer includes only layers below it; messages/ is the vocabulary every layer may use.
# 2. Service folders inside a layer do not include each other sideways: actors/embedding/ never
#    includes actors/wals/; they talk through messages/. Files at the top of a layer, the hub
#    folders (apps/cli, apps/bench) and the base folders (messages/cluster, apps/progress,
#    stores/checkpoint, the one checkpoint mechanism every store's service writes through, and
#    compute/nn, the layer kit that compute/moe builds on) are shared.
# 3. compute/ needs no CAF: neither it nor any messages/ header it includes includes <caf/...>,
#    and its library does not link darcy_messages or CAF.
# 4. No circle in apps: the CLI includes the benchmarks, never the reverse (a benchmark returns
#    caf::error like every job, and the CLI prints it).
# 5. darcy_runtime and darcy_base link no store backend: a layer that writes small files uses
#    base/ (crash-safe files), not the stores' LevelDB, hiredis and Snappy.
set -euo pipefail
root=${1:-.}
declare -A allowed=(
  [apps]="apps ops actors runtime messages stores base compute gpu"
  [python]="python ops actors runtime messages stores base compute gpu"
  [ops]="ops actors runtime messages stores base compute gpu"
  [actors]="actors runtime messages stores base compute gpu"
  [runtime]="runtime messages base compute gpu"
  [stores]="stores messages base compute gpu"
  [base]="base messages"
  [compute]="compute messages gpu"
  [gpu]="gpu"
  [messages]="messages"
)
# Folders of a layer that any folder of the same layer may include, or that may include any.
declare -A shared=(
  [apps]="cli bench progress"
  [messages]="cluster"
  [stores]="checkpoint"
  [compute]="nn"
)
status=0
breach() {
  echo "layering: $*"
  status=1
}

for layer in "${!allowed[@]}"; do
  [[ -d "$root/$layer" ]] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    path=$(sed -n 's/.*#include "\([a-z_0-9/]*\)\/[a-z_0-9.]*".*/\1/p' <<<"$line")
    [[ -n "$path" ]] || continue
    target=${path%%/*}
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      breach "$file includes $target/ (from $layer/)"
      continue
    fi
    # Sideways: from LAYER/A/... to LAYER/B/... with A != B, neither shared.
    [[ "$target" == "$layer" ]] || continue
    rel=${file#"$root/$layer/"}
    [[ "$rel" == */* ]] || continue
    from=${rel%%/*}
    [[ "$path" == */* ]] || continue
    to=${path#*/}
    to=${to%%/*}
    [[ "$from" != "$to" ]] || continue
    [[ " ${shared[$layer]:-} " == *" $from "* || " ${shared[$layer]:-} " == *" $to "* ]] && continue
    breach "$file includes $layer/$to/ sideways (from $layer/$from/)"
  done < <(grep -rn '#include "' "$root/$layer" --include='*.hpp' --include='*.cpp' \
             --include='*.cu' || true)
done

# compute/ needs no CAF: follow its messages/ includes.
declare -A seen=()
queue=($(grep -rhoE '#include "messages/[a-z_0-9/.]+"' "$root/compute" | sed 's/.*"\(.*\)"/\1/' \
           | sort -u))
while [[ ${#queue[@]} -gt 0 ]]; do
  header=${queue[0]}
  queue=("${queue[@]:1}")
  [[ -z "${seen[$header]:-}" ]] || continue
  seen[$header]=1
  [[ -f "$root/$header" ]] || continue
  if grep -q '#include <caf/' "$root/$header"; then
    breach "compute/ includes $header, which includes CAF"
  fi
  queue+=($(grep -hoE '#include "messages/[a-z_0-9/.]+"' "$root/$header" \
              | sed 's/.*"\(.*\)"/\1/' || true))
done
while IFS= read -r line; do
  breach "compute/ uses CAF: $line"
done < <(grep -rn '#include <caf/\|caf::' "$root/compute" || true)
if grep -qE 'darcy_messages|darcy_caf|CAF_' "$root/compute/CMakeLists.txt"; then
  breach "compute/CMakeLists.txt links CAF or darcy_messages"
fi

while IFS= read -r line; do
  breach "${line%%:*} includes apps/cli/ (a benchmark returns its error to the CLI)"
done < <(grep -rn '#include "apps/cli/' "$root/apps/bench" || true)

for lib in runtime base; do
  if grep -qE 'darcy_stores|LEVELDB|HIREDIS|SNAPPY' "$root/$lib/CMakeLists.txt"; then
    breach "$lib/CMakeLists.txt links the stores or a store backend"
  fi
done

[[ $status -eq 0 ]] && echo "layering: ok"
exit $status
