#!/bin/sh
# Quick start, step 1: install what is missing, build, and run the main example:
# the MLP of examples/mlp.c trained on Fashion-MNIST for one epoch.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISP_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
./build/bin/mlp --epochs 1
