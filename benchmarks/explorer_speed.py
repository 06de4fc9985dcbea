"""How long the kernel takes from a slider move to all views updated.

Run from the repository root:

    .venv/bin/python benchmarks/explorer_speed.py            # full run
    .venv/bin/python benchmarks/explorer_speed.py --quick    # fewer repetitions

It measures, in one run and on the same machine:

* the full explorer (``attnlib.widgets.attention_explorer``) on the running example
  (3 tokens) and on 8 tokens: the time of ``slider.value = v``, which recomputes
  attention with attnlib, rebuilds every HTML view and serialises the widget messages
  to JSON (a comm that encodes every message stands in for the kernel's);
* the naive approach on the same inputs: clear an ``Output`` and draw a new matplotlib
  figure of the same seven matrices, rendered to PNG as the inline backend does;
* a burst: 30 slider events arriving in one event-loop turn (a fast drag), with
  coalescing on (the default in a kernel) and off.

The goal is a median of at most 16 ms (one frame at 60 Hz) for the full explorer.
This is a measurement script, not a test: it prints figures and never fails on them.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import comm  # noqa: E402
import ipywidgets as widgets  # noqa: E402
import matplotlib  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from comm.base_comm import BaseComm  # noqa: E402

import attnlib  # noqa: E402
from attnlib import widgets as aw  # noqa: E402
from attnlib.plots import heatmap  # noqa: E402


class JsonComm(BaseComm):
    """A comm that JSON-encodes every message it would send, as the kernel's does, and counts the bytes."""

    sent_bytes = 0
    messages = 0

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):  # noqa: D102
        payload = json.dumps({"msg_type": msg_type, "data": data, "metadata": metadata}, default=str)
        JsonComm.sent_bytes += len(payload) + sum(len(b) for b in buffers or [])
        JsonComm.messages += 1


comm.create_comm = JsonComm


def eight_tokens() -> tuple[np.ndarray, list[str]]:
    X = np.random.default_rng(2026).uniform(-1.0, 1.0, size=(8, 2)).round(2)
    return X, [f"t{i + 1}" for i in range(8)]


def slider_values(n: int) -> list[float]:
    """A back-and-forth drag over W_Q[1,1] in slider steps: every move changes the value."""
    pattern = [round(1.0 + 0.05 * k, 2) for k in range(1, 11)] + [round(1.5 - 0.05 * k, 2) for k in range(1, 11)]
    return [pattern[i % len(pattern)] for i in range(n)]


def time_explorer(X: np.ndarray | None, tokens, n: int) -> list[float]:
    ex = aw.attention_explorer(X, tokens)
    slider = ex.sliders["W_Q"][0][0]
    times = []
    JsonComm.sent_bytes = JsonComm.messages = 0  # count the moves' messages, not the widgets' creation
    for v in slider_values(n):
        before = ex.renders
        t0 = time.perf_counter()
        slider.value = v
        times.append(time.perf_counter() - t0)
        assert ex.renders == before + 1, "the views were not re-rendered"
    expected = attnlib.self_attention(ex.X, ex.W_Q, ex.W_K, ex.W_V).weights
    assert np.array_equal(ex.result.weights, expected)
    return times


def naive_figure(result: attnlib.AttentionResult, tokens) -> bytes:
    toks = list(tokens)
    dims = [f"d{j + 1}" for j in range(result.Q.shape[1])]
    fig, axes = plt.subplots(1, 7, figsize=(22, 3.2), layout="constrained")
    panels = [
        (result.Q, toks, dims, "Q"),
        (result.K, toks, dims, "K"),
        (result.V, toks, dims, "V"),
        (result.scores, toks, toks, "scores"),
        (result.scaled, toks, toks, "scaled"),
        (result.weights, toks, toks, "weights"),
        (result.output, toks, dims, "output"),
    ]
    for ax, (M, rows, cols, title) in zip(axes, panels):
        heatmap(M, rows, cols, ax=ax, title=title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72)  # what the inline backend sends on display
    plt.close(fig)
    return buf.getvalue()


def time_naive(X: np.ndarray | None, tokens, n: int) -> list[float]:
    """clear_output + a new matplotlib figure per move, shown through an Output widget."""
    x = attnlib.running_example() if X is None else X
    tokens = attnlib.TOKENS if tokens is None else tokens
    slider = widgets.FloatSlider(value=1.0, min=-2, max=2, step=0.05)
    out = widgets.Output()
    eye = np.eye(x.shape[1])

    def on_move(change):
        W_Q = eye.copy()
        W_Q[0, 0] = change["new"]
        with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel clear_output prints an ANSI clear
            out.clear_output(wait=True)
        png = naive_figure(attnlib.self_attention(x, W_Q, eye, eye), tokens)
        out.outputs = ({"output_type": "display_data", "data": {"image/png": base64.b64encode(png).decode()}, "metadata": {}},)

    slider.observe(on_move, "value")
    times = []
    for v in slider_values(n):
        t0 = time.perf_counter()
        slider.value = v
        times.append(time.perf_counter() - t0)
    return times


def time_burst(X, tokens, coalesce: bool, bursts: int, size: int = 30) -> tuple[list[float], int]:
    ex = aw.AttentionExplorer(X, tokens, coalesce=coalesce)
    slider = ex.sliders["W_Q"][0][0]
    values = slider_values(size * bursts + 1)

    async def run() -> tuple[list[float], int]:
        times = []
        start_renders = ex.renders
        for b in range(bursts):
            t0 = time.perf_counter()
            for v in values[b * size : (b + 1) * size]:
                slider.value = v
            await asyncio.sleep(0)  # the loop gets a turn: the pending render runs
            times.append(time.perf_counter() - t0)
        return times, ex.renders - start_renders

    times, renders = asyncio.run(run())
    expected = attnlib.self_attention(ex.X, ex.W_Q, ex.W_K, ex.W_V).weights
    assert np.array_equal(ex.result.weights, expected)
    return times, renders


def ms(values: list[float]) -> tuple[float, float]:
    arr = np.array(values) * 1000.0
    return float(np.median(arr)), float(np.percentile(arr, 95))


def focused(n: int) -> list[tuple[str, float, float]]:
    rows = []
    cases = [
        ("value_projection_explorer", aw.value_projection_explorer, lambda e, v: setattr(e.sliders["W_V"][1][0], "value", v)),
        ("mask_explorer", aw.mask_explorer, lambda e, v: setattr(e.mask_cells[0][1], "value", int(v * 20) % 2 == 0)),
        ("scaling_explorer", aw.scaling_explorer, lambda e, v: setattr(e, "d_k", [64, 128][int(v * 20) % 2])),
        ("scale_comparison_explorer", aw.scale_comparison_explorer, lambda e, v: setattr(e, "length", v)),
        ("head_count_explorer", aw.head_count_explorer, lambda e, v: setattr(e, "n_heads", [2, 4][int(v * 20) % 2])),
        ("positional_explorer", aw.positional_explorer, lambda e, v: setattr(e, "position", int(v * 20) % 12)),
    ]
    for name, make, move in cases:
        ex = make()
        times = []
        for v in slider_values(n):
            t0 = time.perf_counter()
            move(ex, v)
            times.append(time.perf_counter() - t0)
        rows.append((name, *ms(times)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args()
    n_fast, n_naive, n_bursts = (40, 6, 5) if args.quick else (300, 30, 20)
    matplotlib.use("Agg")
    print(f"python {platform.python_version()}, numpy {np.__version__}, ipywidgets {widgets.__version__}, {os.cpu_count()} CPU(s)")
    try:
        print(f"load average: {os.getloadavg()[0]:.2f}")
    except OSError:
        pass
    X8, t8 = eight_tokens()
    # warm up (matplotlib fonts, the colour table)
    time_explorer(None, None, 5)
    time_naive(None, None, 2)
    print()
    print(f"{'case':<34}{'median ms':>11}{'p95 ms':>10}{'naive median':>14}{'naive p95':>11}{'ratio':>9}")
    results = {}
    for label, X, toks in (("full explorer, 3 tokens", None, None), ("full explorer, 8 tokens", X8, t8)):
        fast = time_explorer(X, toks, n_fast)
        per_move, msgs = JsonComm.sent_bytes / n_fast, JsonComm.messages / n_fast
        naive = time_naive(X, toks, n_naive)
        (fm, fp), (nm, np95) = ms(fast), ms(naive)
        results[label] = (fm, fp, nm, np95)
        print(f"{label:<34}{fm:>11.2f}{fp:>10.2f}{nm:>14.1f}{np95:>11.1f}{nm / fm:>8.0f}x")
        print(f"  ({msgs:.0f} messages, {per_move / 1024:.1f} KiB per move, goal: median <= 16 ms, {'met' if fm <= 16 else 'NOT met'})")
    print()
    for label, X, toks in (("3 tokens", None, None), ("8 tokens", X8, t8)):
        on, renders_on = time_burst(X, toks, True, n_bursts)
        off, renders_off = time_burst(X, toks, False, n_bursts)
        print(
            f"burst of 30 events, {label}: coalesced {ms(on)[0]:.2f} ms median per burst ({renders_on / n_bursts:.0f} render per burst), "
            f"uncoalesced {ms(off)[0]:.2f} ms ({renders_off / n_bursts:.0f} renders per burst)"
        )
    print()
    print(f"{'focused explorer':<34}{'median ms':>11}{'p95 ms':>10}")
    for name, m, p in focused(max(20, n_fast // 3)):
        print(f"{name:<34}{m:>11.2f}{p:>10.2f}")
    print(f"\nmedian over all full-explorer cases: {statistics.median(v[0] for v in results.values()):.2f} ms")


if __name__ == "__main__":
    main()
