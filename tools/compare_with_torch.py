"""attnlib.transformer.encoder_layer against torch.nn.TransformerEncoderLayer, on random layers.

torch is not a dependency of the book or of attnlib; this script is for anyone who has it:

    PYTHONPATH=. python tools/compare_with_torch.py            # 200 random layers, prints the largest difference
    PYTHONPATH=. python tools/compare_with_torch.py --cases 50 --seed 3
    PYTHONPATH=. python tools/compare_with_torch.py --base     # also four layers of the paper's base size

Each case draws a sequence length, a head count, a head width, d_ff, the norm order (post-norm or
pre-norm), the activation (relu or gelu) and a mask (none, causal, or a random boolean mask), builds
PyTorch's layer in float64 with ``batch_first=True`` and ``dropout=0``, sets *every* parameter to
random numbers (PyTorch starts its biases at 0 and its gains at 1, which would leave the biases and
gains untested), switches it to eval mode and runs it on a batch of two random sequences. attnlib
gets the same weights through ``params_from_torch(layer.state_dict())`` and the opposite boolean
mask (PyTorch's True = blocked, attnlib's True = may attend). Each case is run twice in PyTorch:
under ``torch.no_grad()``, where PyTorch may take its fused "fast path" for inference, and with
gradients enabled, where it runs the ordinary modules; both are compared. Every case also checks that
``encoder_layer_cost`` counts as many parameters as PyTorch's layer holds.

The script exits with status 1 if any difference exceeds ``--tolerance`` (1e-10 by default).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - the point of the script is to need torch
    sys.exit("this script needs PyTorch (pip install torch); the book and attnlib do not")

from attnlib.transformer import encoder_layer, encoder_layer_cost, params_from_torch


def random_case(rng: np.random.Generator) -> dict:
    n_heads = int(rng.integers(1, 5))
    return {
        "n": int(rng.integers(1, 13)),
        "n_heads": n_heads,
        "d_model": n_heads * int(rng.integers(1, 7)),
        "d_ff": int(rng.integers(1, 25)),
        "norm_first": bool(rng.integers(2)),
        "activation": ("relu", "gelu")[int(rng.integers(2))],
        "mask": ("none", "causal", "random")[int(rng.integers(3))],
    }


def run_case(case: dict, rng: np.random.Generator) -> dict:
    n, d = case["n"], case["d_model"]
    layer = torch.nn.TransformerEncoderLayer(
        d,
        case["n_heads"],
        dim_feedforward=case["d_ff"],
        dropout=0.0,
        activation=case["activation"],
        batch_first=True,
        norm_first=case["norm_first"],
        dtype=torch.float64,
    )
    with torch.no_grad():
        for tensor in layer.parameters():
            tensor.copy_(torch.from_numpy(rng.normal(scale=0.5, size=tuple(tensor.shape))))
    layer.eval()
    X = rng.normal(size=(2, n, d))
    allowed = None
    if case["mask"] == "causal":
        allowed = np.tril(np.ones((n, n), dtype=bool))
    elif case["mask"] == "random":
        allowed = rng.random((n, n)) < 0.6
        allowed[np.arange(n), np.arange(n)] = True  # every query may attend to at least itself
    torch_mask = None if allowed is None else torch.from_numpy(~allowed)  # PyTorch: True = may NOT attend

    params = params_from_torch({k: v.detach().numpy() for k, v in layer.state_dict().items()})
    counted = sum(c["params"] for c in encoder_layer_cost(n, d, case["n_heads"], case["d_ff"]).values())
    if counted != sum(t.numel() for t in layer.parameters()):
        raise AssertionError(
            f"encoder_layer_cost counts {counted} parameters, PyTorch's layer has {sum(t.numel() for t in layer.parameters())}"
        )
    mask = "causal" if case["mask"] == "causal" else allowed
    ours = np.stack(
        [encoder_layer(x, params, case["n_heads"], mask=mask, norm_first=case["norm_first"], activation=case["activation"]) for x in X]
    )
    src = torch.from_numpy(X)
    with torch.no_grad():
        inference = layer(src, src_mask=torch_mask).numpy()
    with torch.enable_grad():
        ordinary = layer(src, src_mask=torch_mask).detach().numpy()
    return {"no_grad": float(np.abs(ours - inference).max()), "with_grad": float(np.abs(ours - ordinary).max())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-10)
    parser.add_argument("--base", action="store_true", help="also the paper's base size: d_model 512, 8 heads, d_ff 2048, n 64")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    worst = {"no_grad": (0.0, None), "with_grad": (0.0, None)}
    covered = set()
    for _ in range(args.cases):
        case = random_case(rng)
        covered.add((case["norm_first"], case["activation"], case["mask"]))
        for path, diff in run_case(case, rng).items():
            if diff > worst[path][0]:
                worst[path] = (diff, case)
    if args.base:  # the four orders x activations at the paper's base size, causal
        for norm_first in (False, True):
            for activation in ("relu", "gelu"):
                case = {"n": 64, "n_heads": 8, "d_model": 512, "d_ff": 2048, "norm_first": norm_first, "activation": activation}
                case["mask"] = "causal"
                covered.add((norm_first, activation, "causal"))
                for path, diff in run_case(case, rng).items():
                    if diff > worst[path][0]:
                        worst[path] = (diff, case)
    print(f"torch {torch.__version__}, {args.cases} random layers (float64, eval, batch_first=True, dropout=0), seed {args.seed}")
    print(f"combinations of norm order x activation x mask covered: {len(covered)} of 12")
    for path, (diff, case) in worst.items():
        print(f"largest |attnlib - torch| ({path}): {diff:.3e}" + (f"  at {case}" if case else ""))
    ok = all(diff <= args.tolerance for diff, _ in worst.values())
    print(f"all within {args.tolerance:g}: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
