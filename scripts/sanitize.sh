#!/usr/bin/env bash
# Builds the whole project with a sanitizer in a directory of its own and runs the suite there:
#   scripts/sanitize.sh address   # ASan + UBSan, in build-asan
#   scripts/sanitize.sh thread    # TSan, in build-tsan
# Every process the tests start (darcy node included) writes its reports under
# BUILD/sanitizer-reports/; the last lines say how many reports there were and where.
set -euo pipefail
kind=${1:?address or thread}
jobs=${JOBS:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)
case $kind in
  address) dir=${BUILD_DIR:-$root/build-asan} ;;
  thread) dir=${BUILD_DIR:-$root/build-tsan} ;;
  *) echo "sanitize.sh: give address or thread, not '$kind'" >&2; exit 2 ;;
esac
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# -O1: a sanitized build of every file takes half as long as at -O2, and runs nearly as fast.
cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DDARCY_SANITIZE="$kind" -DDARCY_ENABLE_CUDA=OFF \
  -DDARCY_NATIVE=OFF
cmake --build "$dir" -j "$jobs"
reports=$dir/sanitizer-reports
rm -rf "$reports" && mkdir -p "$reports"
supp=$root/tests/sanitizers
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp:log_path=$reports/ubsan"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:log_path=$reports/asan"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp"
export TSAN_OPTIONS="second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$reports/tsan"
status=0
# Sanitized processes run several times slower: each test gets three times the usual bound.
(cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900) || status=$?
found=$(find "$reports" -type f | wc -l)
echo "sanitize.sh: $kind: ctest exit $status, $found report file(s) in $reports"
for f in $(find "$reports" -type f | head -20); do
  echo "--- $f"
  grep -m3 -E "^(SUMMARY|WARNING|ERROR)|runtime error" "$f" || head -3 "$f"
done
[ "$status" -eq 0 ] && [ "$found" -eq 0 ]
