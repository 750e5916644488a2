#!/bin/bash
# The allocation-failure sweep (issue 18; Note [Allocation seam] in
# src/base/alloc_internal.h, tests/test_alloc_fail.c), run twice in a
# sanitizer build with -DDISP_FAULT_INJECTION=ON: every scenario's failure
# points, once and from N on, each one reported or absorbed, leak-free, the
# run after it equal; then the second run must print the same table (the
# same points fail the same way).
#   bash .ci/alloc_sweep.sh [BUILD_DIR]   (default build-asan, configured here if needed)
# DISP_ALLOC_SWEEP_POINTS bounds the points per sweep (default 400: the
# small scenarios are swept whole, disp_init's ~7300 allocations evenly).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
cmake -S . -B "$dir" -DDISP_WERROR=ON -DDISP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DDISP_FAULT_INJECTION=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target test_alloc_fail
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export DISP_ALLOC_SWEEP_POINTS=${DISP_ALLOC_SWEEP_POINTS:-400}
export DISP_TEST_TIMEOUT=${DISP_TEST_TIMEOUT:-1800}
first=$(mktemp) second=$(mktemp)
trap 'rm -f "$first" "$second"' EXIT
"./$dir/bin/test_alloc_fail" | tee "$first"
echo "-- the same sweep again"
"./$dir/bin/test_alloc_fail" >"$second"
if diff <(grep '^alloc sweep' "$first") <(grep '^alloc sweep' "$second"); then
  echo "alloc sweep: the second run is equal ($(grep -c '^alloc sweep' "$second") sweeps)"
else
  echo "alloc sweep: the second run differs (above)" >&2
  exit 1
fi
