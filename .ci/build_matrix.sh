#!/bin/bash
# The build matrix (issue 18): the whole tree (library, tools, tests,
# examples, benchmarks) in the four CMake build types with gcc and with
# clang, warnings as errors, each in build-matrix/<cc>-<type>; then the suite
# on the plain gcc Release build. Prints a table and exits non-zero on any
# failure. A zero-warning -DDISP_WERROR=ON build is the user's default build
# (DISP_WERROR is off by default) with -Werror added, so it also shows that
# `cmake -DCMAKE_BUILD_TYPE=Release` builds for a user. clang's OpenMP comes
# from libomp-dev (scripts/deps.sh with DISP_DEPS_FULL=1 installs it).
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
rows=()
mkdir -p build-matrix
failed=0
for cc in gcc clang; do
  ver=$("$cc" --version | head -1)
  for type in Release Debug RelWithDebInfo MinSizeRel; do
    dir=build-matrix/$cc-$type
    start=$(date +%s)
    result=ok
    if ! CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=$type -DDISP_WERROR=ON >"$dir.log" 2>&1 ||
       ! cmake --build "$dir" -j"$jobs" >>"$dir.log" 2>&1; then
      result=FAILED
      failed=1
      grep -E -m20 "error|warning" "$dir.log"
    fi
    warnings=$(grep -c "\[-W" "$dir.log") # warnings, and warnings made errors
    rows+=("$(printf '%-6s %-15s %-7s %6ss  warnings=%s  %s' "$cc" "$type" "$result" $(($(date +%s) - start)) \
                     "$warnings" "$ver")")
    # keep the gcc Release tree for the suite; the others only take disk
    [ "$cc-$type" = gcc-Release ] || rm -rf "$dir"
  done
done
printf '%-6s %-15s %-7s %7s  %s\n' compiler "build type" result time warnings
printf '%s\n' "${rows[@]}"

echo "== the suite on the plain gcc Release build"
if ! ctest --test-dir build-matrix/gcc-Release -j"$jobs" --output-on-failure; then failed=1; fi
exit $failed
