#!/bin/sh
# The disp tool's contract: exit codes, located schema errors, stable output.
disp=$1
data=$2
manifest_ops=$3 # the manifest's schemas, generated (build/generated/aten_ops.txt)
pass=0
fail=0
check() { # name, condition result
  if [ "$2" -eq 0 ]; then pass=$((pass+1)); echo "PASS $1"; else fail=$((fail+1)); echo "FAIL $1"; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$disp" --version | grep -q '^disp (libdispatch) [0-9]*\.[0-9]*\.[0-9]*$'; check version $?
DISP_CPU_CAPABILITY=default DISP_NUM_THREADS=3 "$disp" --version | grep -q '^CPU capability: default; threads: 3; BLAS: [A-Za-z]'
check version_capability_threads $?
# a capability the CPU lacks is never chosen; an unknown name is ignored
env -u DISP_NUM_THREADS DISP_CPU_CAPABILITY=bogus OMP_NUM_THREADS=2 "$disp" --version | grep -q "; threads: 2; BLAS: "; check omp_num_threads $?
"$disp" --help | grep -q 'simulate'; check help $?
for c in schema simulate keys keyset table state fallbacks ops check; do
  "$disp" $c --help >/dev/null 2>&1; check "help_$c" $?
done

printf 'aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n' > "$tmp/good.txt"
"$disp" schema "$tmp/good.txt" > "$tmp/out.txt"; check schema_ok $?
cmp -s "$tmp/good.txt" "$tmp/out.txt"; check schema_roundtrip $?

printf 'ok::a(Tensor x) -> Tensor\nbad::b(Tensor x -> Tensor\n' > "$tmp/bad.txt"
"$disp" schema "$tmp/bad.txt" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ]; check schema_bad_exit_1 $?
grep -q '^2:[0-9]*: error: expected' "$tmp/err.txt"; check schema_bad_located $?
grep -q '^ok::a(Tensor x) -> Tensor$' "$tmp/out.txt"; check schema_bad_keeps_good_lines $?

"$disp" schema "$data/schemas.txt" > "$tmp/all.txt"; check schema_all_exit_0 $?
grep -v '^#' "$data/schemas.txt" | cmp -s - "$tmp/all.txt"; check schema_all_roundtrip $?

# Input files: read whole (a NUL byte is an error for its line, not the end of the
# file); directories and unreadable files are errors with the reason; exit 1.
printf 'a::f(Tensor x) -> Tensor\nb::g(Tensor\000 x) -> Tensor\nc::h(int x) -> ()\n' > "$tmp/nul.txt"
"$disp" schema "$tmp/nul.txt" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ]; check schema_nul_exit_1 $?
grep -qx '2:12: error: line 2 contains a NUL byte' "$tmp/err.txt"; check schema_nul_located $?
printf 'a::f(Tensor x) -> Tensor\nc::h(int x) -> ()\n' | cmp -s - "$tmp/out.txt"; check schema_nul_keeps_other_lines $?
"$disp" schema < "$tmp/nul.txt" > /dev/null 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ] && grep -q 'line 2 contains a NUL byte' "$tmp/err.txt"; check schema_stdin_nul $?
mkdir "$tmp/dir"
for c in schema simulate "simulate --calls" check-ops; do
  name=$(echo "$c" | tr ' -' '__')
  "$disp" $c "$tmp/dir" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
  [ $rc -eq 1 ]; check "${name}_directory_exit_1" $?
  grep -q "cannot read $tmp/dir: Is a directory" "$tmp/err.txt"; check "${name}_directory_reason" $?
  "$disp" $c "$tmp/missing.txt" > /dev/null 2> "$tmp/err.txt"; rc=$?
  [ $rc -eq 1 ] && grep -q "cannot read $tmp/missing.txt: No such file or directory" "$tmp/err.txt"
  check "${name}_missing_file" $?
done
[ ! -s "$tmp/out.txt" ] || grep -q '^FAIL' "$tmp/out.txt"; check directory_prints_no_results $?
printf 'def x::op(Tensor self) -> Tensor\nimpl CPU\000\nimpl Meta\n' > "$tmp/nulscript.txt"
"$disp" simulate "$tmp/nulscript.txt" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ] && grep -q 'line 2: contains a NUL byte' "$tmp/err.txt" && [ ! -s "$tmp/out.txt" ]
check simulate_nul_refused $?
"$disp" check-ops "$tmp/nulscript.txt" > /dev/null 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ] && grep -q 'line 2: contains a NUL byte' "$tmp/err.txt"; check check_ops_nul_refused $?
if [ "$(id -u)" -ne 0 ]; then
  printf 'a::f(Tensor x) -> Tensor\n' > "$tmp/secret.txt"; chmod 000 "$tmp/secret.txt"
  "$disp" schema "$tmp/secret.txt" > /dev/null 2> "$tmp/err.txt"; rc=$?
  [ $rc -eq 1 ] && grep -q 'Permission denied' "$tmp/err.txt"; check schema_unreadable $?
fi

"$disp" keyset AutogradCPU PrivateUse1 | grep -q '^highest key: AutogradPrivateUse1$'; check keyset_autograd_privateuse1 $?
"$disp" keyset CPU ADInplaceOrView AutogradCPU AutocastCPU | grep -qx 'DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)'; check keyset_print $?
"$disp" keyset NotAKey >/dev/null 2>&1; [ $? -eq 1 ]; check keyset_bad_key $?
"$disp" keys | grep -q '^AutogradPrivateUse1 .*runtime'; check keys_lists_runtime $?
"$disp" keys | grep -q '^CompositeImplicitAutograd .*alias'; check keys_lists_alias $?

printf 'def x::op(Tensor self) -> Tensor\nimpl CPU\nimpl NotAKey\n' > "$tmp/script.txt"
"$disp" simulate "$tmp/script.txt" > /dev/null 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ]; check simulate_bad_exit_1 $?
grep -q 'line 3' "$tmp/err.txt"; check simulate_bad_names_line $?
"$disp" simulate "$data/dispatch/op2.txt" | head -1 | grep -qx '== oracle::op2'; check simulate_header $?
# simulate --calls builds every operator's arguments and returns from its schema
# (it used to call each one as (Tensor) -> Tensor: a use-after-free under ASan).
cat > "$tmp/calls.txt" <<'END'
def x::f(Tensor a, int b, float c=1.5, Tensor? d=None, int[2] k, Scalar s, str mode, Tensor[] ts, Tensor?[] os, SymInt[] sz, ScalarType dt, Device dev, bool flag=False, int[] dims=[0, 1]) -> Tensor
impl CPU
impl AutogradCPU
def x::m(Tensor(a!) self, *, float eps=1e-05) -> (Tensor(a!), Tensor[], int, float, bool, Scalar, Tensor?)
impl CompositeExplicitAutograd
def x::n(Tensor self) -> ()
fallback PrivateUse1 boxed
impl CPU
END
"$disp" simulate --calls "$tmp/calls.txt" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err.txt" ]; check simulate_calls_any_schema_exit_0 $?
[ "$(grep -c '^== ' "$tmp/out.txt")" -eq 3 ]; check simulate_calls_any_schema_all_ops $?
# x::f and x::n: 4 CPU + 3 PrivateUse1 scenarios; x::m (CompositeExplicitAutograd): all 10 but the two
# whose tensors require grad - x::m writes self, and writing a leaf that requires grad is refused (1.13)
[ "$(grep -c '^  result ok$' "$tmp/out.txt")" -eq 22 ]; check simulate_calls_any_schema_results $?
[ "$(grep -c 'x::m: a leaf Variable that requires grad is being used in an in-place operation' "$tmp/out.txt")" -eq 2 ]
check simulate_calls_inplace_leaf_refused $?
grep -A3 '^== x::f' "$tmp/out.txt" | grep -q '^  kernel reg#0 \[CPU\] at CPU'; check simulate_calls_redispatch_reaches_cpu $?
grep -q 'fallback \[boxed\] for x::n at PrivateUse1' "$tmp/out.txt"; check simulate_calls_fallback_returns_nothing $?
cat > "$tmp/calls_bad.txt" <<'END'
def x::g(Tensor a, Dict(str, Tensor) d) -> Tensor
impl CPU
def x::ok(Tensor a) -> Tensor
impl CPU
def x::h(int a) -> Tensor
def x::q(Tensor a, Generator g) -> Tensor
def x::r(Tensor a) -> Dict(str, Tensor)
END
"$disp" simulate --calls "$tmp/calls_bad.txt" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ]; check simulate_calls_unbuildable_exit_1 $?
grep -qx "disp simulate --calls: x::g: cannot build an argument of type 'Dict(str, Tensor)' (argument 2 'd')" "$tmp/err.txt"
check simulate_calls_unbuildable_argument_named $?
grep -qx "disp simulate --calls: x::q: cannot build an argument of type 'Generator' (argument 2 'g')" "$tmp/err.txt"
check simulate_calls_generator_refused $?
grep -qx "disp simulate --calls: x::h: cannot build a return of type 'Tensor' (return 1) without a Tensor argument" "$tmp/err.txt"
check simulate_calls_tensor_return_needs_tensor $?
grep -qx "disp simulate --calls: x::r: cannot build a return of type 'Dict(str, Tensor)' (return 1)" "$tmp/err.txt"
check simulate_calls_unbuildable_return_named $?
grep -qx '== x::ok' "$tmp/out.txt" && ! grep -q '^== x::[ghqr]' "$tmp/out.txt"; check simulate_calls_refusal_skips_only_that_op $?

"$disp" table nosuch::op >/dev/null 2>&1; [ $? -eq 1 ]; check table_unknown_op $?
"$disp" fallbacks | grep -q '^BackendSelect: fallthrough '; check fallbacks $?
# Autocast: 1.13's kernels on AutocastCPU/AutocastCUDA for mm, the built-in fallthrough elsewhere.
"$disp" table aten::mm > "$tmp/mm.txt"
grep -q '^AutocastCPU: registered at .* \[kernel\]$' "$tmp/mm.txt"; check table_mm_autocast_cpu_kernel $?
grep -q '^AutocastCUDA: registered at .* \[kernel\]$' "$tmp/mm.txt"; check table_mm_autocast_cuda_kernel $?
grep -q '^AutocastPrivateUse1: fallthrough .*\[backend fallback\]$' "$tmp/mm.txt"; check table_mm_autocast_privateuse1_fallthrough $?
"$disp" table aten::cat | grep -q '^AutocastCUDA: fallthrough .*\[backend fallback\]$'; check table_cat_no_autocast_cuda $?
"$disp" table aten::relu | grep -q '^AutocastCPU: fallthrough .*\[backend fallback\]$'; check table_relu_no_autocast_cpu $?
"$disp" nonsense >/dev/null 2>&1; [ $? -eq 2 ]; check unknown_command $?

# Every row of the operator manifest registered with its schema: `disp ops` lists every
# registered operator's schema and must equal the manifest's list. The manifest is checked
# against the oracles, which it does not generate: each schema is one libtorch 1.13 registers, verbatim
# (tests/data/schemas_aten_113.txt), and every operator of the conformance kit (tests/data/aten_ops.txt)
# is in it.
LC_ALL=C sort "$manifest_ops" > "$tmp/want_ops.txt"
"$disp" ops | LC_ALL=C sort > "$tmp/got_ops.txt"
cmp -s "$tmp/want_ops.txt" "$tmp/got_ops.txt"; check ops_every_manifest_row_registered $?
[ "$(wc -l < "$tmp/got_ops.txt")" -eq "$(wc -l < "$manifest_ops")" ] && [ -s "$manifest_ops" ]; check ops_count_is_the_manifests $?
grep -v "^#" "$data/schemas_aten_113.txt" | LC_ALL=C sort > "$tmp/schemas_113.txt"
[ -z "$(LC_ALL=C comm -23 "$tmp/want_ops.txt" "$tmp/schemas_113.txt")" ]; check manifest_schemas_are_1_13_verbatim $?
grep -v '^#' "$data/aten_ops.txt" | LC_ALL=C sort > "$tmp/kit_ops.txt"
[ -z "$(LC_ALL=C comm -23 "$tmp/kit_ops.txt" "$tmp/want_ops.txt")" ]; check manifest_has_every_conformance_op $?
"$disp" ops | LC_ALL=C sort -c 2>/dev/null; check ops_sorted $?
"$disp" ops --backend PrivateUse1 --required | grep -q '^aten::empty.memory_format('; check ops_required_has_empty $?
"$disp" ops --backend CPU --missing | grep -q '^aten::_copy_from('; check ops_missing_cpu_copy_from $?

# Issue 18, class 6: every refused invocation exits 2 with a message on
# stderr (a ninth --device used to exit 2 silently).
refused() { # name, args...
  name=$1; shift
  "$disp" "$@" >/dev/null 2>"$tmp/err"; rc=$?
  [ "$rc" -eq 2 ] && [ -s "$tmp/err" ]; check "$name" $?
}
refused test_ninth_device test --device cpu --device cpu --device cpu --device cpu --device cpu --device cpu \
  --device cpu --device cpu --device cpu
grep -q "at most 8 devices" "$tmp/err"; check test_ninth_device_names_the_limit $?
refused test_device_without_value test --device
refused test_bad_device test --device nosuchdevice
refused test_unknown_option test --bogus
refused unknown_command no-such-command
refused plugin_without_value ops --plugin

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
