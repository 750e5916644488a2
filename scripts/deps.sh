#!/bin/sh
# Installs what libdispatch needs to build and test, from Debian's packages.
# As root it runs apt-get; otherwise it names the packages to install.
set -e
need=""
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# libjansson-dev parses safetensors headers (src/interop/); zlib1g-dev and
# dataset-fashion-mnist (Fashion-MNIST under /usr/share/datasets/fashion-mnist)
# are for the training examples and their tests; fortunes (the quote files
# under /usr/share/games/fortunes) is the GPT example's corpus.
for p in cmake make gcc pkg-config libffi-dev uthash-dev libopenblas-dev libsleef-dev libjansson-dev zlib1g-dev \
         dataset-fashion-mnist fortunes; do
  have_pkg "$p" || need="$need $p"
done
# clang (libFuzzer, and the clang builds of .ci/build_matrix.sh with libomp-dev's
# OpenMP) and valgrind are for CI's fuzzing, build matrix and the benchmarks;
# python3 for CI's source checks (.ci/check_tensor_fields.sh).
if [ "${DISP_DEPS_FULL:-0}" = 1 ]; then
  for p in clang libomp-dev valgrind python3; do have_pkg "$p" || need="$need $p"; done
fi
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "installing:$need"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq $need >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  echo "installing with sudo:$need"
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
else
  echo "libdispatch needs these Debian packages:$need" >&2
  echo "install them as root:  apt-get install$need" >&2
  exit 1
fi
