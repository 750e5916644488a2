#!/bin/sh
# Quick start, step 2: build and run every test.
# BUILD_DIR picks the build directory; extra arguments go to CMake
# (e.g. -DDISP_SANITIZE=ON).
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DDISP_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
