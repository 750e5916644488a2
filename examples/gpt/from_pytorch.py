#!/usr/bin/env python3
"""from_pytorch.py IN OUT - a GPT trained in PyTorch as a safetensors file
the C example (examples/gpt) loads: `gpt --steps 0 --eval-every 0 --resume OUT`
evaluates it, `--sample N` writes with it.

IN is any of
  * a nanoGPT checkpoint (ckpt.pt: a dict whose 'model' is the state_dict,
    keys possibly prefixed '_orig_mod.' by torch.compile; 'model_args' gives
    the number of heads),
  * a state_dict saved with torch.save(model.state_dict(), IN),
  * a Dict<string, Tensor> written by libtorch's torch::pickle_save
    (bench/gpt_twin_torch --export-pt).
OUT holds the parameters under nanoGPT's names (examples/gpt/model.h) as
float32, without lm_head.weight (tied to transformer.wte.weight: refused if
it differs) and without the attention masks nanoGPT keeps as buffers
(transformer.h.N.attn.bias). No optimizer state and no step: the C example
loads it as weights only (checkpoint.h).

The C example's model is bias-free with 4 layers, 4 heads, width 128 and
context 64; its vocabulary is the bytes of the fortunes corpus it reads, so
the model must have been trained on those tokens (as the libtorch twin is).
Anything else is refused with the configuration the file has.

Needs python3 with torch (Debian: python3-torch); writes the file with the
standard library (json, struct).
"""
import json
import struct
import sys

try:
    import torch
except ImportError:
    sys.exit("from_pytorch.py: python3 cannot import torch (Debian: apt-get install python3-torch)")

LAYERS, HEADS, WIDTH, CONTEXT = 4, 4, 128, 64
PER_LAYER = ["ln_1.weight", "attn.c_attn.weight", "attn.c_proj.weight", "ln_2.weight", "mlp.c_fc.weight",
             "mlp.c_proj.weight"]


class Refused(Exception):
    pass


def load(path):
    """(state_dict, heads or None) from any of the accepted files."""
    # Tensors and plain containers only where torch can (weights_only); 1.13's
    # restricted unpickler refuses Python floats, which nanoGPT's ckpt.pt has
    # (best_val_loss, config), so those load fully: convert files you trust.
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except OSError:
        raise
    except Exception:  # noqa: BLE001 - TypeError (no weights_only) or what the restricted unpickler raises
        try:
            obj = torch.load(path, map_location="cpu")
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 - torch raises many kinds
            raise Refused(f"not a file torch.load reads ({e})") from e
    heads = None
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        args = obj.get("model_args")
        if isinstance(args, dict):
            heads = args.get("n_head")
            if args.get("bias"):
                raise Refused("a nanoGPT model with bias=True; the C example's model has no biases")
        obj = obj["model"]
    if not isinstance(obj, dict) or not obj:
        raise Refused("neither a nanoGPT checkpoint nor a state_dict (a dict of tensors)")
    state = {}
    for name, t in obj.items():
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            raise Refused(f"entry {name!r} is not a named tensor")
        state[name[len("_orig_mod."):] if name.startswith("_orig_mod.") else name] = t
    return state, heads


def config_of(state, heads):
    """The configuration the tensors have, as a dict and as a phrase."""
    wte, wpe = state.get("transformer.wte.weight"), state.get("transformer.wpe.weight")
    if wte is None or wpe is None or wte.dim() != 2 or wpe.dim() != 2:
        raise Refused("no transformer.wte.weight / transformer.wpe.weight matrices: not a nanoGPT model")
    layers = 0
    while any(k.startswith(f"transformer.h.{layers}.") for k in state):
        layers += 1
    cfg = {"vocab": wte.shape[0], "width": wte.shape[1], "context": wpe.shape[0], "layers": layers, "heads": heads}
    phrase = (f"{layers} layers, {'?' if heads is None else heads} heads, width {wte.shape[1]}, "
              f"context {wpe.shape[0]}, vocabulary {wte.shape[0]}")
    return cfg, phrase


def expected(cfg):
    """The C example's parameters: name -> shape, in model.h's order."""
    V, C = cfg["vocab"], WIDTH
    shapes = {"transformer.wte.weight": [V, C], "transformer.wpe.weight": [CONTEXT, C]}
    per = [[C], [3 * C, C], [C, C], [C], [4 * C, C], [C, 4 * C]]
    for layer in range(LAYERS):
        for part, shape in zip(PER_LAYER, per):
            shapes[f"transformer.h.{layer}.{part}"] = shape
    shapes["transformer.ln_f.weight"] = [C]
    return shapes


def convert(state, heads):
    """The tensors to write (name -> float32 tensor), or Refused."""
    cfg, phrase = config_of(state, heads)
    print(f"from_pytorch.py: the model has {phrase}")
    want = (cfg["layers"], cfg["width"], cfg["context"]) == (LAYERS, WIDTH, CONTEXT) and heads in (None, HEADS)
    if not want:
        raise Refused(f"the C example's model has {LAYERS} layers, {HEADS} heads, width {WIDTH} and context "
                      f"{CONTEXT}; this one has {phrase}")
    if heads is None:
        print(f"from_pytorch.py: the file does not say how many heads; the C example assumes {HEADS}")
    biases = sorted(k for k in state if k.endswith(".bias") and not k.endswith(".attn.bias"))
    if biases:
        raise Refused(f"the model has {len(biases)} bias tensor(s) ({biases[0]}{', ...' if len(biases) > 1 else ''}: "
                      "nanoGPT's bias=True); the C example's model has none")
    lm_head = state.get("lm_head.weight")
    if lm_head is not None and not torch.equal(lm_head, state["transformer.wte.weight"]):
        raise Refused("lm_head.weight differs from transformer.wte.weight; the C example ties them")
    shapes = expected(cfg)
    dropped = {k for k in state if k == "lm_head.weight" or k.endswith(".attn.bias")}
    extra = sorted(set(state) - set(shapes) - dropped)
    if extra:
        raise Refused(f"tensors the C example's model does not have: {', '.join(extra[:5])}"
                      + (" ..." if len(extra) > 5 else ""))
    out = {}
    for name, shape in shapes.items():
        t = state.get(name)
        if t is None:
            raise Refused(f"{name} is missing")
        if list(t.shape) != shape:
            raise Refused(f"{name} is {list(t.shape)}; the C example's is {shape}")
        if not t.is_floating_point():
            raise Refused(f"{name} is {t.dtype}, not a floating-point tensor")
        if t.dtype != torch.float32:
            print(f"from_pytorch.py: {name}: {t.dtype} converted to float32")
        out[name] = t.detach().to(torch.float32).contiguous()
    return out


def write_safetensors(tensors, path):
    """The safetensors layout: an 8-byte little-endian header length, the
    JSON header (padded with spaces to a multiple of 8, so data stay
    aligned), then each tensor's little-endian bytes in header order."""
    names = sorted(tensors)  # one dtype: the reference writer's order is by name
    header, offset = {"__metadata__": {"format": "pt", "source": "examples/gpt/from_pytorch.py"}}, 0
    for name in names:
        n = 4 * tensors[name].numel()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in names:
            values = tensors[name].flatten().tolist()
            f.write(struct.pack(f"<{len(values)}f", *values))


def main(argv):
    if len(argv) != 3 or argv[1].startswith("-"):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    try:
        state, heads = load(argv[1])
        tensors = convert(state, heads)
        write_safetensors(tensors, argv[2])
    except Refused as e:
        print(f"from_pytorch.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"from_pytorch.py: {e}", file=sys.stderr)
        return 1
    print(f"from_pytorch.py: wrote {len(tensors)} tensors to {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
