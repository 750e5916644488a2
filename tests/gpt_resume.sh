#!/bin/sh
# gpt_resume.sh GPT_BINARY - the GPT example resumes exactly: 8 steps in one
# run give the same per-step losses (all 9 digits of a float) as 4 steps,
# a checkpoint (--save), and 4 more from it (--resume).
set -eu
gpt=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags="--steps 8 --eval-every 0 --loss-every 1"
"$gpt" $flags >"$dir/full"
"$gpt" $flags --stop 4 --save "$dir/ck.safetensors" >"$dir/first"
"$gpt" $flags --resume "$dir/ck.safetensors" >"$dir/second"
grep '^step [0-9]* loss' "$dir/full" >"$dir/want"
cat "$dir/first" "$dir/second" | grep '^step [0-9]* loss' >"$dir/got"
[ "$(wc -l <"$dir/want")" -eq 8 ] || { echo "expected 8 loss lines"; cat "$dir/full"; exit 1; }
if ! cmp -s "$dir/want" "$dir/got"; then
  echo "resumed run differs from the uninterrupted one:"; diff "$dir/want" "$dir/got"; exit 1
fi
echo "8 steps resumed at step 4: every loss identical"
