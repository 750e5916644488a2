#!/bin/sh
# gpt_twin.sh [STEPS] [BUILD] - the GPT example beside its libtorch twin
# (bench/gpt_twin_torch.cpp; built where libtorch-dev is): the same initial
# weights (a step-0 checkpoint), batches and schedule.
#   1. per-step loss over the first STEPS steps (default 50), at 1 thread:
#      the largest relative difference (issue 20's bound: 1e-4);
#   2. time for those steps at 1 and 2 threads, both sides, and the ratio;
#   3. the twin's trained weights exported to safetensors and evaluated by
#      the C example: the two val losses side by side (bound: 1e-5);
#   4. where python3 imports torch (python3-torch), the same weights saved
#      by libtorch's torch::pickle_save (--export-pt), converted by
#      examples/gpt/from_pytorch.py and evaluated by the C example: the
#      converted tensors must be the --export file's, byte for byte, and the
#      val loss the twin's.
# A whole run is `gpt_twin.sh 2000` (about 15 minutes here).
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
  exports=
  [ $th -eq 1 ] && exports="--export $dir/twin.safetensors --export-pt $dir/twin.pt" # the weights beside t1's val loss
  t0=$(date +%s.%N)
  "$gpt" $common --loss-every 1 --threads $th >"$dir/c$th"
  t1=$(date +%s.%N)
  "$twin" --init "$dir/init.safetensors" $common --loss-every 1 --threads $th $exports >"$dir/t$th"
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
tv=$(grep '^val loss' "$dir/t1" | cut -d' ' -f3)
cv=$("$gpt" --steps 0 --eval-every 0 --resume "$dir/converted.safetensors" | grep '^val loss' | cut -d' ' -f3)
echo "PyTorch file (torch::pickle_save) converted by from_pytorch.py, evaluated by ours: $cv; libtorch's own: $tv"
[ "$cv" = "$tv" ] || { echo "the converted weights' val loss differs"; exit 1; }
