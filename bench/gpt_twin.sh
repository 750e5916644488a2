#!/bin/sh
# gpt_twin.sh [STEPS] [BUILD] - the GPT example beside its libtorch twin
# (bench/gpt_twin_torch.cpp; built where libtorch-dev is): the same initial
# weights (a step-0 checkpoint), batches and schedule.
#   1. time for STEPS steps (default 50) at 1 and 2 threads, both sides, and
#      the ratio: the programs' own "trained ... in X s" (the loop, without
#      start-up and the final evaluation) and the whole process. The same
#      thread settings on both sides: --threads N, and OPENBLAS_NUM_THREADS=N
#      for the twin (libtorch leaves OpenBLAS's own pool at its default, one
#      thread per core; ours runs OpenBLAS on one thread and splits products
#      itself);
#   2. per-step loss at 1 thread, the largest relative difference over the
#      first 50 steps (issue 20's bound: 1e-4) and over all of them;
#   3. val loss of both, and the twin's trained weights exported to
#      safetensors and evaluated by the C example (bound: 1e-5);
#   4. where python3 imports torch (python3-torch), the same weights saved
#      by libtorch's torch::pickle_save (--export-pt), converted by
#      examples/gpt/from_pytorch.py and evaluated by the C example: the
#      converted tensors must be the --export file's, byte for byte, and the
#      val loss the twin's;
#   5. sampling SAMPLE characters (default 500) from those weights at 1 and
#      2 threads: tokens/s of the twin (nanoGPT's generate: no cache, the
#      window cropped to 64) and of ours with the KV cache, keeping nanoGPT's
#      window (--kv-keep 63) and restarting over half of it (--kv-keep 32),
#      and the ratios (issue 20's bound: ours >= 5x).
# A whole run is `gpt_twin.sh 2000` (about 20 minutes here, on a quiet machine).
# Environment: SAMPLE (characters to sample, default 500); KEEP=DIR keeps the
# runs' outputs (c1, t1, c2, t2: ours and libtorch's at 1 and 2 threads) and
# the weights files there.
set -eu
steps=${1:-50}
build=${2:-build}
gpt=$build/bin/gpt
twin=$build/bench/gpt_twin_torch
[ -x "$twin" ] || { echo "gpt_twin: $twin not built (needs libtorch-dev)"; exit 2; }
dir=$(mktemp -d)
trap 'if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$dir"/c1 "$dir"/t1 "$dir"/c2 "$dir"/t2 "$dir"/*.safetensors "$KEEP"/ 2>/dev/null; fi; rm -rf "$dir"' EXIT
"$gpt" --steps "$steps" --stop 0 --eval-every 0 --save "$dir/init.safetensors" >/dev/null
common="--steps $steps --eval-every 0 --eval-iters 20 --loss-every 1"
loop_s() { sed -n 's/^trained to step [0-9]* in \([0-9.]*\) s$/\1/p' "$1"; }
for th in 1 2; do
  exports=
  [ $th -eq 1 ] && exports="--export $dir/twin.safetensors --export-pt $dir/twin.pt" # the weights beside t1's val loss
  t0=$(date +%s.%N)
  "$gpt" $common --threads $th >"$dir/c$th"
  t1=$(date +%s.%N)
  OPENBLAS_NUM_THREADS=$th "$twin" --init "$dir/init.safetensors" $common --threads $th $exports >"$dir/t$th"
  t2=$(date +%s.%N)
  echo "$th $(loop_s "$dir/c$th") $(loop_s "$dir/t$th") $t0 $t1 $t2" | awk '{
    printf "threads %d: training loop ours %.1f s, libtorch %.1f s (libtorch/ours %.2fx); whole process %.1f s, %.1f s (%.2fx)\n",
           $1, $2, $3, $3 / $2, $5 - $4, $6 - $5, ($6 - $5) / ($5 - $4) }'
done
grep '^step [0-9]* loss' "$dir/c1" >"$dir/cl"
grep '^step [0-9]* loss' "$dir/t1" >"$dir/tl"
paste "$dir/cl" "$dir/tl" | awk '$2 != $6 { print "misaligned: " $0; exit 1 }
  { d = ($4 - $8) / $8; if (d < 0) d = -d; if (d > m) { m = d; at = $2 } if (NR == 50) { m50 = m; at50 = at } }
  END { if (NR < 50) { m50 = m; at50 = at }
        printf "per-step loss at 1 thread: largest relative difference %.3g over the first %d steps (step %s), %.3g over all %d (step %s)\n",
               m50, NR < 50 ? NR : 50, at50, m, NR, at }'
exact() { sed -n 's/^val loss exact: //p' "$1"; }
ev=$("$gpt" --steps 0 --eval-every 0 --loss-every 1 --resume "$dir/twin.safetensors" >"$dir/e"; exact "$dir/e")
echo "$(exact "$dir/c1") $(exact "$dir/t1") $ev" | awk '{ d = $3 - $2; if (d < 0) d = -d; e = $1 - $2; if (e < 0) e = -e;
  printf "val loss: ours %.6f, libtorch %.6f (difference %.2g); libtorch'"'"'s weights evaluated by ours %.6f (difference %.2g)\n",
         $1, $2, e, $3, d }'
rate() { tail -n 1 | sed -n 's/.*(\([0-9.]*\) tokens\/s)$/\1/p'; }
n=${SAMPLE:-500}
once="--steps 0 --eval-every 0 --eval-iters 1 --sample $n"
for th in 1 2; do
  t=$(OPENBLAS_NUM_THREADS=$th "$twin" --init "$dir/twin.safetensors" $once --threads $th | rate)
  c63=$("$gpt" --resume "$dir/twin.safetensors" $once --threads $th --kv-keep 63 | rate)
  c32=$("$gpt" --resume "$dir/twin.safetensors" $once --threads $th --kv-keep 32 | rate)
  echo "$th $n $t $c63 $c32" | awk '{ printf "sampling %d tokens, threads %d: libtorch %.0f tokens/s; " \
    "ours (KV cache) %.0f keeping the cropped window (%.2fx), %.0f restarting over 32 (%.2fx)\n",
    $2, $1, $3, $4, $4 / $3, $5, $5 / $3 }'
done
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import torch' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "PyTorch file: python3-torch is missing (python3 cannot import torch): from_pytorch.py not run"
  exit 0
fi
"$py" "$(dirname "$0")/../examples/gpt/from_pytorch.py" "$dir/twin.pt" "$dir/converted.safetensors" >/dev/null
"$py" - "$dir/twin.safetensors" "$dir/converted.safetensors" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
same = tensors(sys.argv[1]) == tensors(sys.argv[2])
print("PyTorch file: from_pytorch.py's tensors are --export's, byte for byte" if same else
      "PyTorch file: from_pytorch.py's tensors DIFFER from --export's")
sys.exit(not same)
PY
tv=$(exact "$dir/t1")
cv=$("$gpt" --steps 0 --eval-every 0 --loss-every 1 --resume "$dir/converted.safetensors" >"$dir/p"; exact "$dir/p")
echo "PyTorch file (torch::pickle_save) converted by from_pytorch.py, evaluated by ours: $cv; libtorch's own: $tv"
echo "$cv $tv" | awk '{ d = $1 - $2; if (d < 0) d = -d; exit !(d <= 1e-5) }' || { echo "the converted weights' val loss differs"; exit 1; }
