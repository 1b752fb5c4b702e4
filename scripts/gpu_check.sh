#!/usr/bin/env bash
# The GPU checks of gpu/, on a machine with a CUDA device but none of Darcy's build
# dependencies. Two steps:
#   scripts/gpu_check.sh build DIR    (here) builds darcy-bench and darcy_gpu_tests for any x86-64-v3
#                                     CPU in DIR/build and copies them, with the shared libraries
#                                     they need beyond glibc, libstdc++ and CUDA's, into DIR/bundle.
#   scripts/gpu_check.sh run DIR OUT  (there) runs the CUDA tests against their CPU references,
#                                     under compute-sanitizer's memcheck when it is installed,
#                                     then `darcy-bench moe-gpu [ARGS...]`, logging all into OUT
#                                     (BENCH_ONLY=1: the benchmark alone; THREADS: its CPU threads).
# The GPU machine needs the NVIDIA driver and CUDA 13's cuBLAS (libcublas.so.13).
set -euo pipefail
mode=${1:?build or run}
dir=${2:?a directory}

case "$mode" in
build)
  root=$(cd "$(dirname "$0")/.." && pwd)
  cmake -S "$root" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDARCY_MARCH=x86-64-v3
  cmake --build "$dir/build" -j "${JOBS:-$(nproc)}" --target darcy-bench darcy_gpu_tests
  rm -rf "$dir/bundle"
  mkdir -p "$dir/bundle/bin" "$dir/bundle/lib"
  for exe in "$dir/build/apps/darcy-bench" "$dir/build/tests/darcy_gpu_tests"; do
    strip -o "$dir/bundle/bin/$(basename "$exe")" "$exe"
    # Every resolved library but the C runtime, the C++ runtime and CUDA's own: those the
    # GPU machine has in versions at least as new.
    ldd "$exe" | awk '$3 ~ /^\// {print $3}' |
      grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libcudart)\.so' |
      while read -r lib; do cp -Lu "$lib" "$dir/bundle/lib/"; done
  done
  du -sh "$dir/bundle"
  ;;
run)
  out=${3:?an output directory}
  mkdir -p "$out"
  bundle="$dir/bundle"
  cublas=$(find /usr/local /usr/lib /opt -name 'libcublas.so.13*' 2>/dev/null | head -1 || true)
  libs="$bundle/lib${cublas:+:$(dirname "$cublas")}"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
  grep -m1 'model name' /proc/cpuinfo | tee -a "$out/device.txt"
  nproc | tee -a "$out/device.txt"
  status=0
  if [ -z "${BENCH_ONLY:-}" ]; then
    LD_LIBRARY_PATH="$libs" "$bundle/bin/darcy_gpu_tests" --gtest_brief=0 2>&1 |
      tee "$out/gpu_tests.log" || status=1
    # Out-of-bounds and misaligned accesses in the kernels, where CUDA's memcheck is installed.
    if command -v compute-sanitizer >/dev/null; then
      LD_LIBRARY_PATH="$libs" timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$bundle/bin/darcy_gpu_tests" --gtest_brief=1 > "$out/memcheck.log" 2>&1 || status=1
      tail -3 "$out/memcheck.log"
    fi
  fi
  # The PyTorch peer runs with the machine's own libraries, not the bundle's.
  LD_LIBRARY_PATH="$libs" "$bundle/bin/darcy-bench" moe-gpu --threads "${THREADS:-2}" \
    --python "env -u LD_LIBRARY_PATH python3" "${@:4}" 2>&1 | tee "$out/bench_moe_gpu.log" || status=1
  exit $status
  ;;
*)
  echo "gpu_check.sh: build or run, not '$mode'" >&2
  exit 2
  ;;
esac
