#!/bin/sh
# The disp tool's contract: exit codes, located schema errors, stable output.
disp=$1
data=$2
pass=0
fail=0
check() { # name, condition result
  if [ "$2" -eq 0 ]; then pass=$((pass+1)); echo "PASS $1"; else fail=$((fail+1)); echo "FAIL $1"; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$disp" --version | grep -q '^disp (libdispatch) [0-9]*\.[0-9]*\.[0-9]*$'; check version $?
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

# Every built-in operator registered with PyTorch 1.13's exact schema: `disp ops` lists
# every registered operator's schema, sorted, and must equal the declaration file.
grep -v '^#' "$data/aten_ops.txt" | LC_ALL=C sort > "$tmp/want_ops.txt"
"$disp" ops | LC_ALL=C sort > "$tmp/got_ops.txt"
cmp -s "$tmp/want_ops.txt" "$tmp/got_ops.txt"; check ops_all_120_schemas_verbatim $?
[ "$(wc -l < "$tmp/got_ops.txt")" -eq 120 ]; check ops_count_120 $?
"$disp" ops | LC_ALL=C sort -c 2>/dev/null; check ops_sorted $?
"$disp" ops --backend PrivateUse1 --required | grep -q '^aten::empty.memory_format('; check ops_required_has_empty $?
"$disp" ops --backend CPU --missing | grep -q '^aten::_copy_from('; check ops_missing_cpu_copy_from $?

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
