#!/usr/bin/env bash
# Checks the layering rules of docs/architecture.md, naming each breach:
# 1. A layer includes only layers below it; messages/ is the vocabulary every layer may use.
# 2. Service folders inside a layer do not include each other sideways: actors/embedding/ never
#    includes actors/wals/; they talk through messages/. Files at the top of a layer are shared.
#    A hub folder (apps/cli, apps/bench: the executables' commands) may include any sibling and
#    no sibling includes it; a base folder (apps/progress, apps/command, messages/cluster,
#    stores/checkpoint, the one checkpoint mechanism every store's service writes through,
#    compute/nn, the layer kit that compute/moe builds on, ops/estimator, the Estimator API, and
#    ops/online, the online trainer, which ops/ctr builds on) may be included by any sibling and
#    itself includes only base siblings.
# 3. No circle between sibling folders, at any depth and whatever their marks: when files of
#    ops/estimator/distributed include ops/estimator/export, none of export/ includes
#    distributed/, directly or through other siblings.
# 4. compute/ needs no CAF: neither it nor any messages/ header it includes includes <caf/...>,
#    and its library does not link darcy_messages or CAF.
# 5. darcy_runtime and darcy_base link no store backend: a layer that writes small files uses
#    base/ (crash-safe files), not the stores' LevelDB, hiredis and Snappy.
# 6. The `darcy` executable links no benchmark source and no test kit (darcy_testing,
#    darcy_chaos): those are darcy-bench's.
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
# Folders of a layer that may include any sibling (hubs), and that any sibling may include
# (bases, which include only bases).
declare -A hubs=(
  [apps]="cli bench"
)
declare -A bases=(
  [apps]="progress command"
  [messages]="cluster"
  [stores]="checkpoint"
  [compute]="nn"
  [ops]="estimator online"
)
status=0
is_hub() { [[ " ${hubs[$layer]:-} " == *" $1 "* ]]; }
is_base() { [[ " ${bases[$layer]:-} " == *" $1 "* ]]; }
breach() {
  echo "layering: $*"
  status=1
}

# The folder an include names: "actors/embedding" of #include "actors/embedding/x.hpp".
include_re='#include "([a-z_0-9/]*)/[a-z_0-9.]*"'
for layer in "${!allowed[@]}"; do
  [[ -d "$root/$layer" ]] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    [[ "$line" =~ $include_re ]] || continue
    path=${BASH_REMATCH[1]}
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
    if is_hub "$to"; then
      breach "$file includes the hub $layer/$to/ (no sibling includes a hub)"
    elif is_base "$from" && ! is_base "$to"; then
      breach "$file includes $layer/$to/ from the base folder $layer/$from/ (a base includes only bases)"
    elif ! is_hub "$from" && ! is_base "$to"; then
      breach "$file includes $layer/$to/ sideways (from $layer/$from/)"
    fi
  done < <(grep -rn '#include "' "$root/$layer" --include='*.hpp' --include='*.cpp' \
             --include='*.cu' || true)
done

# No circle between sibling folders: each include from PARENT/A/... to PARENT/B/... is an edge
# A -> B among PARENT's folders.
while IFS= read -r circle; do
  breach "a circle between sibling folders: $circle"
done < <(grep -rn '#include "' "$root"/{apps,python,ops,actors,runtime,stores,base,compute,gpu,messages} \
           --include='*.hpp' --include='*.cpp' --include='*.cu' 2>/dev/null |
         sed -n "s|^$root/\([^:]*\):[0-9]*:#include \"\([a-z_0-9/]*\.[a-z]*\)\".*|\1 \2|p" |
         python3 -c '
import collections, sys
edges = collections.defaultdict(set)
for line in sys.stdin:
    src, dst = line.split()
    a, b = src.split("/")[:-1], dst.split("/")[:-1]
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    if n < len(a) and n < len(b):  # two different folders under a/..n
        parent = "/".join(a[:n])
        edges[(parent, a[n])].add(b[n])
found = set()
def walk(parent, node, path):
    for nxt in edges.get((parent, node), ()):
        if nxt in path:
            cycle = path[path.index(nxt):] + [nxt]
            key = frozenset(cycle)
            if key not in found:
                found.add(key)
                print(" -> ".join(parent + "/" + c for c in cycle))
        elif len(path) < 16:
            walk(parent, nxt, path + [nxt])
for parent, node in list(edges):
    walk(parent, node, [node])
')

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

# darcy, the executable users deploy, links no benchmark and no test kit.
darcy_target=$(sed -n '/^add_executable(darcy$/,/^target_link_libraries(darcy /p;/^target_link_libraries(darcy /,/)/p' \
  "$root/apps/CMakeLists.txt")
if grep -qE 'bench/|darcy_testing|darcy_chaos|darcy_bench' <<<"$darcy_target"; then
  breach "apps/CMakeLists.txt: the darcy executable links a benchmark source or the test kit"
fi

for lib in runtime base; do
  if grep -qE 'darcy_stores|LEVELDB|HIREDIS|SNAPPY' "$root/$lib/CMakeLists.txt"; then
    breach "$lib/CMakeLists.txt links the stores or a store backend"
  fi
done

[[ $status -eq 0 ]] && echo "layering: ok"
exit $status
