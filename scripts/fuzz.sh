#!/usr/bin/env bash
# Builds tests/fuzz/ as libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs each
# for SECONDS (default 60) from a copy of its committed corpus:
#   scripts/fuzz.sh 60          # every target
#   scripts/fuzz.sh 600 manifest
# A crash leaves its input in build-fuzz/artifacts/NAME/; copy it into tests/fuzz/corpus/NAME/
# once fixed, so that `make test` replays it from then on. The last lines sum up each target.
set -euo pipefail
seconds=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}
need=()
command -v clang++ >/dev/null 2>&1 || need+=(clang)
dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "ok installed" ||
  need+=(libclang-rt-14-dev)
if [[ ${#need[@]} -gt 0 ]]; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDARCY_FUZZ=ON \
  -DDARCY_ENABLE_CUDA=OFF -DDARCY_NATIVE=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$dir" -j "$jobs" --target fuzz_targets
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in "$root"/tests/fuzz/*_fuzzer.cpp; do
    n=$(basename "$f" _fuzzer.cpp)
    targets+=("$n")
  done
fi
summary=()
status=0
for t in "${targets[@]}"; do
  work=$dir/corpus/$t
  artifacts=$dir/artifacts/$t
  mkdir -p "$work" "$artifacts"
  cp -n "$root/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  log=$dir/fuzz-$t.log
  code=0
  "$dir/tests/fuzz/${t}_fuzzer" "$work" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || code=$?
  execs=$(grep -m1 -o "stat::number_of_executed_units: *[0-9]*" "$log" | grep -o "[0-9]*$" || echo 0)
  crashes=$(find "$artifacts" -type f | wc -l)
  summary+=("$t: $execs executions in ${seconds} s, corpus $(ls "$work" | wc -l) inputs, $crashes crash input(s), exit $code")
  [[ $code -ne 0 || $crashes -ne 0 ]] && status=1
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $status
