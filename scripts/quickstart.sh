#!/bin/sh
# Quick start, step 1: install what is missing, build, run the main example.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
./build/bin/dispatch_table
