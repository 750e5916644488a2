#!/bin/sh
# `disp safetensors FILE` (issue 20): a valid file's listing, exit 0; a
# malformed one's error naming the file, the tensor and the cause, exit 1.
#   test_disp_safetensors.sh DISP CORPUS_DIR
disp=$1
corpus=$2
pass=0
fail=0
check() { # name, condition result
  if [ "$2" -eq 0 ]; then pass=$((pass+1)); echo "PASS $1"; else fail=$((fail+1)); echo "FAIL $1"; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$disp" safetensors "$corpus/every_dtype.safetensors" > "$tmp/out.txt" 2> "$tmp/err.txt"
check valid_exit_0 $?
head -1 "$tmp/out.txt" | grep -q 'every_dtype.safetensors: 10 tensors, 198 bytes of data$'; check valid_summary $?
grep -q '^__metadata__ format: pt$' "$tmp/out.txt"; check valid_metadata $?
grep -q '^bf16  BF16  \[2, 3\]$' "$tmp/out.txt"; check valid_tensor_line $?
[ "$(grep -c '  \[2, 3\]$' "$tmp/out.txt")" -eq 10 ]; check valid_all_tensors $?
[ ! -s "$tmp/err.txt" ]; check valid_no_stderr $?
"$disp" safetensors "$corpus/scalar_and_empty.safetensors" | grep -q '^s     F64   \[\]$'; check valid_zero_dim $?

# overlapping offsets: b starts inside a
printf '\155\0\0\0\0\0\0\0{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}    1234' \
  > "$tmp/overlap.safetensors"
"$disp" safetensors "$tmp/overlap.safetensors" > "$tmp/out.txt" 2> "$tmp/err.txt"; rc=$?
[ $rc -eq 1 ]; check malformed_exit_1 $?
grep -q "^disp safetensors: disp_safetensors_load: $tmp/overlap.safetensors: tensor 'b': data_offsets \[2, 4\] overlap" "$tmp/err.txt"
check malformed_names_file_tensor_cause $?
[ ! -s "$tmp/out.txt" ]; check malformed_no_stdout $?
"$disp" safetensors "$tmp/missing.safetensors" 2> "$tmp/err.txt"; [ $? -eq 1 ]; check missing_exit_1 $?
grep -q 'cannot open .*missing.safetensors: No such file' "$tmp/err.txt"; check missing_reason $?
"$disp" safetensors > /dev/null 2>&1; [ $? -eq 2 ]; check usage_exit_2 $?
"$disp" safetensors --help | grep -q 'usage: disp safetensors FILE'; check help $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
