#!/bin/bash
# The suite under every OpenBLAS kernel family and every library CPU
# capability this CPU can execute (issue 18: results must not depend on
# which kernels OpenBLAS or the library pick). Usage: bash .ci/coretypes.sh [BUILD_DIR]
# Runs ctest in BUILD_DIR (default build) once per OPENBLAS_CORETYPE and
# once per DISP_CPU_CAPABILITY, each at the default thread count, and says
# which could not run here and why. Exits non-zero if any run fails.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do case "$flags" in *" $f "*) ;; *) return 1 ;; esac; done; }

# Which /proc/cpuinfo flags each OpenBLAS family needs (pni is SSE3).
declare -A need=([Prescott]="pni" [Nehalem]="sse4_2" [Sandybridge]="avx" [Haswell]="avx2 fma"
                 [Zen]="avx2 fma" [SkylakeX]="avx512f avx512bw avx512vl avx512dq avx512cd"
                 [Cooperlake]="avx512f avx512bw avx512vl avx512dq avx512cd avx512_bf16")
declare -A capneed=([default]="" [avx2]="avx2 fma" [avx512]="avx512f avx512bw avx512vl avx512dq")

rows=()
failed=0
mkdir -p "$dir/Testing" # a fresh build dir has none until ctest first runs
run() { # LABEL ENV...
  local label=$1; shift
  local out log="$dir/Testing/coretype-${label// /_}.log"
  out=$(env "$@" "$dir/bin/disp" --version | tail -1)
  if env "$@" ctest --test-dir "$dir" -j"$(nproc)" --output-on-failure >"$log" 2>&1; then
    rows+=("$(printf '%-30s %-8s %s' "$label" PASS "$out")")
  else
    rows+=("$(printf '%-30s %-8s %s (see %s)' "$label" FAIL "$out" "$log")")
    failed=1
    tail -40 "$log"
  fi
}
skip() { rows+=("$(printf '%-30s %-8s %s' "$1" SKIPPED "$2")"); }

for ct in Prescott Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake; do
  # shellcheck disable=SC2086
  if has ${need[$ct]}; then
    run "OPENBLAS_CORETYPE=$ct" OPENBLAS_CORETYPE=$ct
  else
    skip "OPENBLAS_CORETYPE=$ct" "this CPU lacks ${need[$ct]// /\/} (kernels not exercised here)"
  fi
done
for cap in default avx2 avx512; do
  # shellcheck disable=SC2086
  if has ${capneed[$cap]}; then
    run "DISP_CPU_CAPABILITY=$cap" DISP_CPU_CAPABILITY=$cap
  else
    skip "DISP_CPU_CAPABILITY=$cap" "this CPU lacks ${capneed[$cap]// /\/}: the $cap kernels could not run"
  fi
done

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
printf '%-30s %-8s %s\n' "setting" "result" "what ran"
printf '%s\n' "${rows[@]}"
has avx512f avx512bw avx512vl avx512dq avx512cd ||
  echo "SKIPPED: SkylakeX/Cooperlake/avx512: this CPU lacks AVX-512; its kernels were not exercised here"
exit $failed
