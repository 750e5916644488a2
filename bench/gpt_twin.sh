#!/bin/sh
# gpt_twin.sh [STEPS] [BUILD] - the GPT example beside its libtorch twin
# (bench/gpt_twin_torch.cpp; built where libtorch-dev is): the same initial
# weights (a step-0 checkpoint), batches and schedule.
#   1. per-step loss over the first STEPS steps (default 50), at 1 thread:
#      the largest relative difference (issue 20's bound: 1e-4);
#   2. time for those steps at 1 and 2 threads, both sides, and the ratio;
#   3. the twin's trained weights exported to safetensors and evaluated by
#      the C example: the two val losses side by side (bound: 1e-5);
#   4. sampling SAMPLE characters (default 500) from those weights at 1 and
#      2 threads: tokens/s of the twin (nanoGPT's generate: no cache, the
#      window cropped to 64) and of ours with the KV cache, keeping nanoGPT's
#      window (--kv-keep 63) and restarting over half of it (--kv-keep 32),
#      and the ratios (issue 20's bound: ours >= 5x).
# A whole run is `gpt_twin.sh 2000` (about 15 minutes here).
# Environment: SAMPLE (characters to sample, default 500).
set -eu
steps=${1:-50}
build=${2:-build}
gpt=$build/bin/gpt
twin=$build/bench/gpt_twin_torch
[ -x "$twin" ] || { echo "gpt_twin: $twin not built (needs libtorch-dev)"; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$gpt" --steps "$steps" --stop 0 --eval-every 0 --save "$dir/init.safetensors" >/dev/null
common="--steps $steps --eval-every 0 --eval-iters 20"
for th in 1 2; do
  t0=$(date +%s.%N)
  "$gpt" $common --loss-every 1 --threads $th >"$dir/c$th"
  t1=$(date +%s.%N)
  "$twin" --init "$dir/init.safetensors" $common --loss-every 1 --threads $th --export "$dir/twin.safetensors" >"$dir/t$th"
  t2=$(date +%s.%N)
  echo "$th $t0 $t1 $t2" | awk '{ printf "threads %d: ours %.2f s, libtorch %.2f s, libtorch/ours %.2fx\n",
                                   $1, $3 - $2, $4 - $3, ($4 - $3) / ($3 - $2) }'
done
grep '^step [0-9]* loss' "$dir/c1" >"$dir/cl"
grep '^step [0-9]* loss' "$dir/t1" >"$dir/tl"
paste "$dir/cl" "$dir/tl" | awk '$2 != $6 { print "misaligned: " $0; exit 1 }
  { d = ($4 - $8) / $8; if (d < 0) d = -d; if (d > m) { m = d; at = $2 } }
  END { printf "per-step loss, %d steps at 1 thread: largest relative difference %.3g (step %s)\n", NR, m, at }'
echo "val loss, ours: $(grep '^val loss' "$dir/c1" | cut -d' ' -f3); libtorch: $(grep '^val loss' "$dir/t1" | cut -d' ' -f3);" \
     "libtorch's weights evaluated by ours: $("$gpt" --steps 0 --eval-every 0 --resume "$dir/twin.safetensors" | grep '^val loss' | cut -d' ' -f3)"
rate() { tail -n 1 | sed -n 's/.*(\([0-9.]*\) tokens\/s)$/\1/p'; }
n=${SAMPLE:-500}
once="--steps 0 --eval-every 0 --eval-iters 1 --sample $n"
for th in 1 2; do
  t=$("$twin" --init "$dir/twin.safetensors" $once --threads $th | rate)
  c63=$("$gpt" --resume "$dir/twin.safetensors" $once --threads $th --kv-keep 63 | rate)
  c32=$("$gpt" --resume "$dir/twin.safetensors" $once --threads $th --kv-keep 32 | rate)
  echo "$th $n $t $c63 $c32" | awk '{ printf "sampling %d tokens, threads %d: libtorch %.0f tokens/s; " \
    "ours (KV cache) %.0f keeping the cropped window (%.2fx), %.0f restarting over 32 (%.2fx)\n",
    $2, $1, $3, $4, $4 / $3, $5, $5 / $3 }'
done
