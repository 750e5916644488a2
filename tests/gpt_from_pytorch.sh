#!/bin/sh
# gpt_from_pytorch.sh GPT_BINARY CONVERTER - examples/gpt/from_pytorch.py
# turns PyTorch files into weights the C example evaluates exactly: a
# checkpoint of the C example (2 trained steps) rewritten by torch as a
# nanoGPT ckpt.pt (prefixed _orig_mod., lm_head.weight tied, attn.bias
# buffers), and as a plain state_dict, converted back, has the original's
# bytes and gives its val loss in C; a model with biases, another shape or
# an untied lm_head is refused (exit 1, the cause named). Skipped (77)
# without a python3 that imports torch (python3-torch is not a CI package).
set -u
gpt=$1 conv=$2
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import torch' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "python3-torch is missing: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags="--steps 2 --eval-every 0 --eval-iters 2"
"$gpt" $flags --save "$dir/c.safetensors" >"$dir/c.out" || { cat "$dir/c.out"; exit 1; }
want=$(grep '^val loss' "$dir/c.out")
# the C checkpoint's parameters as PyTorch files of each kind the converter takes
"$py" - "$dir" <<'PY' || exit 1
import json, struct, sys, torch
d = sys.argv[1]
b = open(f"{d}/c.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
sd = {}
for k, v in h.items():
    if k == "__metadata__" or k.startswith("optim."):
        continue
    s, e = v["data_offsets"]
    vals = struct.unpack(f"<{(e - s) // 4}f", b[8 + n + s:8 + n + e])
    sd[k] = torch.tensor(vals, dtype=torch.float32).view(v["shape"])
T = sd["transformer.wpe.weight"].shape[0]
full = dict(sd)
full["lm_head.weight"] = sd["transformer.wte.weight"]
for l in range(4):
    full[f"transformer.h.{l}.attn.bias"] = torch.ones(T, T).tril().view(1, 1, T, T)
args = dict(n_layer=4, n_head=4, n_embd=128, block_size=T, bias=False, vocab_size=sd["transformer.wte.weight"].shape[0], dropout=0.0)
torch.save({"model": {"_orig_mod." + k: v for k, v in full.items()}, "model_args": args, "iter_num": 2,
            "best_val_loss": 9.0, "config": {}}, f"{d}/ckpt.pt")
torch.save(full, f"{d}/state_dict.pt")
biased = dict(full); biased["transformer.ln_f.bias"] = torch.zeros(128)
torch.save(biased, f"{d}/biased.pt")
untied = dict(full); untied["lm_head.weight"] = full["lm_head.weight"] + 1
torch.save(untied, f"{d}/untied.pt")
torch.save({"model": full, "model_args": dict(args, n_head=8)}, f"{d}/heads.pt")
wide = {k: v for k, v in full.items() if not k.startswith("transformer.h.3.")}
torch.save(wide, f"{d}/layers.pt")
PY
rc=0
for f in ckpt state_dict; do
  "$py" "$conv" "$dir/$f.pt" "$dir/$f.safetensors" >/dev/null || { echo "$f.pt: conversion failed"; rc=1; continue; }
  "$py" - "$dir/c.safetensors" "$dir/$f.safetensors" <<'PY' || { echo "$f.pt: the converted tensors differ"; rc=1; }
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__" and not k.startswith("optim.")}
sys.exit(tensors(sys.argv[1]) != tensors(sys.argv[2]))
PY
  got=$("$gpt" --steps 0 --eval-every 0 --eval-iters 2 --resume "$dir/$f.safetensors" | grep '^val loss')
  echo "$f.pt: C example's $want, converted: $got"
  [ "$got" = "$want" ] || rc=1
done
refuse() { # FILE WORDS: exit 1 and the message has WORDS
  msg=$("$py" "$conv" "$dir/$1.pt" "$dir/out.safetensors" 2>&1 >/dev/null); r=$?
  case "$r:$msg" in 1:*"$2"*) echo "$1.pt refused: $msg" ;; *) echo "$1.pt: exit $r, '$msg' (wanted '$2')"; rc=1 ;; esac
}
refuse biased "bias tensor(s)"
refuse untied "lm_head.weight differs"
refuse heads "8 heads"
refuse layers "3 layers"
exit $rc
