"""Dense, key-blocked and tiled (FlashAttention) attention on long sequences: time, peak memory, ratios.

Run from the repository root (the full run takes tens of minutes and about 10 GB of memory at
n = 16,384 for the dense pass):

    nice .venv/bin/python benchmarks/long_sequences.py                      # n = 256 ... 65,536
    nice .venv/bin/python benchmarks/long_sequences.py --max-n 4096         # a quick look
    nice .venv/bin/python benchmarks/long_sequences.py --torch-python /path/to/python-with-torch

For each n (d = 64, seeded standard-normal Q, K, V) it measures, in one run, the median time of

* ``attnlib.attention`` (dense: the whole n x n score matrix; only where it fits in memory),
* ``attnlib.blocked.chunked_attention`` (keys in blocks of 128, all queries at once; up to ``--max-blocked-n``),
* ``attnlib.blocked.flash_attention`` (tiles of queries x keys) and ``flash_attention_backward``,
* PyTorch's ``torch.nn.functional.scaled_dot_product_attention`` on the CPU, when torch can be imported
  here or by the Python given with ``--torch-python`` (timed in a subprocess, same machine, same run);
  torch is not a dependency of the book, and the benchmark says when it is missing;

in float64 and float32 (attnlib's dense and key-blocked functions compute in float64 only, so their
float32 columns are empty), with one BLAS thread and with the BLAS library's default (threadpoolctl when
it is installed, otherwise a subprocess with the thread variables set; torch gets the same number of
threads through ``torch.set_num_threads``). With the default threads the tiled passes share their tiles
among one worker thread per CPU (``workers=os.cpu_count()``, one BLAS thread each), while dense and
key-blocked use BLAS's own threads. Peak memory is measured with tracemalloc in separate calls;
for the tiled functions it is reported beyond their results (the output, or the three gradients).

It prints fitted exponents (``c n^p`` on n >= 2048), time ratios, memory ratios and the goals of
issue 25, all from this one run. This is a measurement script, not a test: it never fails on a goal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

D = 64
LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
DTYPES = ("float64", "float32")
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def median_time(fn: Callable[[], Any], repeats: int, budget: float = 3.0) -> float:
    """Median of up to ``repeats`` calls, fewer when one call already takes more than ``budget`` seconds."""
    times: list[float] = []
    while len(times) < repeats:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if sum(times) > budget:
            break
    times.sort()
    return times[len(times) // 2]


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# --- torch, in this process or in a subprocess ----------------------------------------------------


def torch_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time torch's CPU scaled_dot_product_attention for every (dtype, n) of ``spec``; needs only torch."""
    import torch
    import torch.nn.functional as F

    if spec["threads"] is not None:
        torch.set_num_threads(spec["threads"])
    gen = torch.Generator().manual_seed(0)
    times: dict[str, float] = {}
    for dtype in spec["dtypes"]:
        for n in spec["lengths"]:
            q, k, v = (torch.randn(1, 1, n, D, generator=gen, dtype=getattr(torch, dtype)) for _ in range(3))
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v)  # warm-up
                times[f"{dtype}:{n}"] = median_time(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v), spec["repeats"])
    return {"version": torch.__version__, "threads": torch.get_num_threads(), "times": times}


def time_torch(lengths: list[int], dtypes: list[str], threads: int | None, repeats: int, torch_python: str | None) -> dict[str, Any] | None:
    """torch's times here when it imports, else through ``torch_python`` (a subprocess); None when neither works."""
    spec = {"lengths": lengths, "dtypes": dtypes, "threads": threads, "repeats": repeats}
    try:
        import torch  # noqa: F401

        return torch_worker(spec)
    except ImportError:
        pass
    if torch_python is None:
        return None
    env = {**os.environ}
    if threads is not None:
        env.update({name: str(threads) for name in BLAS_VARIABLES})
    done = subprocess.run(
        [torch_python, __file__, "--torch-worker", json.dumps(spec)], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        print(f"torch worker failed: {done.stderr.strip()[-500:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- attnlib ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def blas_threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


TorchTimer = Callable[[int, str], Any]


def measure_one(
    args: argparse.Namespace, n: int, dtype: str, threads: int | None, with_memory: bool, state: dict[str, Any]
) -> dict[str, Any]:
    """One row: every attnlib pass at one n and dtype (torch right after the tiled forward, at the same n)."""
    import numpy as np

    from attnlib.backward import attention_backward
    from attnlib.blocked import chunked_attention, flash_attention, flash_attention_backward
    from attnlib.core import attention
    from attnlib.cost import score_matrix_bytes
    from attnlib.measure import peak_memory_bytes

    Q, K, V, dO = (state["rng"].standard_normal((n, D)).astype(dtype) for _ in range(4))
    row: dict[str, Any] = {"n": n, "dtype": dtype}

    # with the default threads, the tiles are shared by one worker thread per CPU (one BLAS thread each)
    workers = 1 if threads == 1 else os.cpu_count() or 1

    def flash() -> Any:
        return flash_attention(Q, K, V, dtype=dtype, workers=workers)

    out, lse = flash_attention(Q, K, V, return_lse=True, dtype=dtype)

    def back() -> Any:
        return flash_attention_backward(Q, K, V, out, lse, dO, dtype=dtype, workers=workers)

    def dense() -> Any:
        return attention(Q, K, V)

    def blocked() -> Any:
        return chunked_attention(Q, K, V)

    with blas_threads(threads):
        row["tiled"] = median_time(flash, args.repeats)
        if state.get("torch_time") is not None:
            row["torch_run"] = state["torch_time"](n, dtype)
        if n <= args.max_backward_n:
            row["backward"] = median_time(back, args.repeats)
        if dtype == "float64":
            free = available_bytes()
            need = state["dense_per_matrix"] * score_matrix_bytes(n, "float64")
            if n <= args.max_dense_n and (free is None or need < 0.5 * free):
                row["dense"] = median_time(dense, args.repeats)
            if n <= args.max_blocked_n:
                row["blocked"] = median_time(blocked, args.repeats)
    if with_memory:
        row["tiled_extra"] = peak_memory_bytes(flash) - out.nbytes
        if "backward" in row:
            row["gradient_bytes"] = 3 * out.nbytes  # dQ, dK, dV: n x d each, as the output (d_k = d_v = D)
            row["backward_extra"] = peak_memory_bytes(back) - row["gradient_bytes"]
        if "blocked" in row:
            row["blocked_peak"] = peak_memory_bytes(blocked)
        if "dense" in row:
            row["dense_peak"] = peak_memory_bytes(dense)
            state["dense_per_matrix"] = row["dense_peak"] / score_matrix_bytes(n, "float64")
        if dtype == "float64" and n <= 2048:
            row["forward_error"] = float(np.abs(out - dense().output).max())
            g = flash_attention_backward(Q, K, V, out, lse, dO)
            row["backward_error"] = max(float(np.abs(a - b).max()) for a, b in zip(g, attention_backward(Q, K, V, dO)))
    return row


def measure(args: argparse.Namespace, threads: int | None, with_memory: bool, torch_time: TorchTimer | None = None) -> dict[str, Any]:
    """attnlib's times (and peaks) for every n and dtype."""
    import numpy as np

    # the dense peak in n x n float64 arrays (updated from each measurement) decides where dense fits
    state: dict[str, Any] = {"rng": np.random.default_rng(0), "dense_per_matrix": 6.0, "torch_time": torch_time}
    rows = []
    for dtype in dtypes_of(args):
        for n in lengths_of(args):
            rows.append(measure_one(args, n, dtype, threads, with_memory, state))
            print(f"  measured {dtype} n={n} (BLAS threads: {threads or 'default'})", flush=True)
    return {"threads": threads, "rows": rows}


def lengths_of(args: argparse.Namespace) -> list[int]:
    if getattr(args, "lengths", None):
        return [int(x) for x in str(args.lengths).split(",")]
    return [n for n in LENGTHS if n <= args.max_n]


def dtypes_of(args: argparse.Namespace) -> list[str]:
    chosen = [x.strip() for x in str(getattr(args, "dtypes", ",".join(DTYPES))).split(",")]
    bad = [x for x in chosen if x not in DTYPES]
    if bad:
        raise SystemExit(f"--dtypes takes {', '.join(DTYPES)}; got {', '.join(bad)}")
    return chosen


def measure_interleaved(args: argparse.Namespace, timers: dict[int | None, TorchTimer]) -> list[dict[str, Any]]:
    """Both thread settings at each (dtype, n) in turn; every row is printed (and saved) as soon as it is measured."""
    import numpy as np

    runs = {threads: {"threads": threads, "rows": []} for threads in timers}
    states = {threads: {"rng": np.random.default_rng(0), "dense_per_matrix": 6.0, "torch_time": timer} for threads, timer in timers.items()}
    for dtype in dtypes_of(args):
        for n in lengths_of(args):
            for threads in timers:
                row = measure_one(args, n, dtype, threads, threads == 1, states[threads])
                runs[threads]["rows"].append(row)
                shown = {k: v for k, v in row.items() if k != "torch_run"}
                shown["torch"] = (row.get("torch_run") or {}).get("times", {}).get(f"{dtype}:{n}")
                print(f"  row (BLAS threads {threads or 'default'}, load {os.getloadavg()[0]:.2f}): {json.dumps(shown)}", flush=True)
                if args.json:
                    args.json.write_text(json.dumps(list(runs.values()), indent=1))
    return list(runs.values())


def measure_in_subprocess(args: argparse.Namespace, threads: int) -> dict[str, Any]:
    """The same measurement with the BLAS thread variables set, for a Python without threadpoolctl."""
    env = {**os.environ, **{name: str(threads) for name in BLAS_VARIABLES}}
    cmd = [sys.executable, __file__, "--attnlib-worker", json.dumps(vars(args) | {"threads": threads})]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the report -------------------------------------------------------------------------------------


def fmt(x: float | None, spec: str = "9.4f") -> str:
    return f"{x:{spec}}" if x is not None else " " * len(f"{0:{spec}}")


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None else None


def report(runs: list[dict[str, Any]], torch_runs: dict[Any, dict[str, Any] | None]) -> None:
    from attnlib.cost import format_bytes
    from attnlib.measure import fit_power_law

    goals: list[str] = []
    for run in runs:
        label = "1 BLAS thread" if run["threads"] == 1 else "BLAS default threads"
        for dtype in DTYPES:
            rows = [r for r in run["rows"] if r["dtype"] == dtype]
            if not rows:
                continue
            for r in rows:
                got = r.get("torch_run")
                r["torch"] = got["times"].get(f"{dtype}:{r['n']}") if got else None
                if got:
                    torch_runs[run["threads"]] = got
            print(f"\n{label}, {dtype}, d = {D} (seconds, median)")
            head = (
                f"{'n':>6} | {'dense':>9} | {'blocked':>9} | {'tiled':>9} | {'tiled bwd':>9} | {'torch':>9} | "
                f"{'tiled/dense':>11} | {'tiled/blocked':>13} | {'tiled/torch':>11} | {'bwd/fwd':>7}"
            )
            print(head + "\n" + "-" * len(head))
            for r in rows:
                print(
                    f"{r['n']:>6} | {fmt(r.get('dense'))} | {fmt(r.get('blocked'))} | {fmt(r['tiled'])} | {fmt(r.get('backward'))} | "
                    f"{fmt(r['torch'])} | {fmt(ratio(r['tiled'], r.get('dense')), '11.2f')} | "
                    f"{fmt(ratio(r['tiled'], r.get('blocked')), '13.2f')} | {fmt(ratio(r['tiled'], r['torch']), '11.2f')} | "
                    f"{fmt(ratio(r.get('backward'), r['tiled']), '7.2f')}"
                )
            print("fitted exponents p of c n^p on n >= 2048:")
            exps = {}
            for key in ("dense", "blocked", "tiled", "backward", "torch"):
                pts = [(r["n"], r[key]) for r in rows if r["n"] >= 2048 and r.get(key)]
                if len(pts) >= 2:
                    exps[key] = fit_power_law([p[0] for p in pts], [p[1] for p in pts]).exponent
                    print(f"  {key:<9} {exps[key]:.2f}  (n = {pts[0][0]} ... {pts[-1][0]})")
            by_n = {r["n"]: r for r in rows}
            where = f"[{label}, {dtype}]"
            if "tiled" in exps:
                goals.append(
                    f"{where} tiled forward exponent <= 2.1: {exps['tiled']:.2f} -> {'met' if exps['tiled'] <= 2.1 else 'NOT met'}"
                )
            goals.append(f"{where} tiled forward runs n = 65,536: {'met' if 65536 in by_n else 'not measured'}")
            if dtype == "float64":
                r = by_n.get(16384, {})
                x = ratio(r.get("tiled"), r.get("dense"))
                goals.append(
                    f"{where} tiled <= 0.5x dense at 16,384: "
                    + (f"{x:.2f}x -> {'met' if x <= 0.5 else 'NOT met'}" if x else "not measured")
                )
            for n in (4096, 16384):
                x = ratio(by_n.get(n, {}).get("tiled"), by_n.get(n, {}).get("torch"))
                target = " <= 1.5x" if dtype == "float64" else " (reported)"
                verdict = (
                    f"{x:.2f}x" + (f" -> {'met' if x <= 1.5 else 'NOT met'}" if dtype == "float64" else "") if x else "torch not measured"
                )
                goals.append(f"{where} tiled / torch at {n:,}{target}: {verdict}")
            worst = max((ratio(r["backward"], r["tiled"]) for r in rows if r["n"] >= 2048 and "backward" in r), default=None)
            if worst is not None:
                goals.append(
                    f"{where} tiled backward <= 3x forward (n >= 2048, worst): {worst:.2f}x -> {'met' if worst <= 3 else 'NOT met'}"
                )
        if run["rows"] and "tiled_extra" in run["rows"][0]:
            print(f"\npeak memory (tracemalloc, measured with {label}); tiled columns: beyond the output / the three gradients")
            head = (
                f"{'dtype':>7} | {'n':>6} | {'dense':>10} | {'blocked':>10} | {'tiled':>10} | {'tiled bwd':>10} | "
                f"{'dense/tiled':>11} | {'blocked/tiled':>13}"
            )
            print(head + "\n" + "-" * len(head))
            for r in run["rows"]:
                dense, blocked = r.get("dense_peak"), r.get("blocked_peak")
                print(
                    f"{r['dtype']:>7} | {r['n']:>6} | {format_bytes(dense) if dense else '':>10} | "
                    f"{format_bytes(blocked) if blocked else '':>10} | "
                    f"{format_bytes(r['tiled_extra']):>10} | {format_bytes(r['backward_extra']) if 'backward_extra' in r else '':>10} | "
                    f"{fmt(ratio(dense, r['tiled_extra']), '11.0f')} | {fmt(ratio(blocked, r['tiled_extra']), '13.0f')}"
                )
            for dtype in DTYPES:
                rows = [r for r in run["rows"] if r["dtype"] == dtype and "tiled_extra" in r]
                if not rows:
                    continue
                worst = max(r["tiled_extra"] for r in rows)
                goals.append(
                    f"[{dtype}] tiled working memory <= 16 MiB at every n up to {rows[-1]['n']:,}: largest {format_bytes(worst)} -> "
                    f"{'met' if worst <= 16 * 2**20 else 'NOT met'}"
                )
                # the whole peak of the backward, its three n x d gradients included
                pts = [(r["n"], r["backward_extra"] + r["gradient_bytes"]) for r in rows if r["n"] >= 2048 and "backward_extra" in r]
                if len(pts) >= 2:
                    p = fit_power_law([a for a, _ in pts], [b for _, b in pts]).exponent
                    verdict = "met" if p <= 1.1 else "NOT met"
                    goals.append(f"[{dtype}] tiled backward peak memory (gradients included) exponent <= 1.1: {p:.2f} -> {verdict}")
                for key in ("dense_peak", "blocked_peak"):
                    pts = [(r["n"], r[key]) for r in rows if r.get(key) and r["n"] >= 2048]
                    if len(pts) >= 2:
                        p = fit_power_law([a for a, _ in pts], [b for _, b in pts]).exponent
                        print(f"  {dtype} {key.replace('_', ' ')} exponent on n >= 2048: {p:.2f}")
            errors = [r for r in run["rows"] if "backward_error" in r]
            if errors:
                f_err = max(r["forward_error"] for r in errors)
                b_err = max(r["backward_error"] for r in errors)
                goals.append(f"[float64] tiled forward against attention, n <= 2048: max |diff| {f_err:.1e}")
                goals.append(
                    f"[float64] tiled backward against attention_backward to 1e-10: max |diff| {b_err:.1e} -> "
                    f"{'met' if b_err <= 1e-10 else 'NOT met'}"
                )
    for threads, run in torch_runs.items():
        if run is None:
            print(f"\ntorch: not importable here and no usable --torch-python: its columns are empty (threads {threads or 'default'})")
        else:
            print(f"\ntorch {run['version']}, {run['threads']} thread(s), scaled_dot_product_attention on the CPU")
    print("\ngoals (issue 25), ratios from this one run:")
    for line in goals:
        print("  " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=65536)
    parser.add_argument("--lengths", help="only these n, comma-separated (for example 4096,16384)")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="float64, float32 or both (comma-separated)")
    parser.add_argument("--max-dense-n", type=int, default=16384, help="largest n for the dense pass (it needs about 5 n^2 numbers)")
    parser.add_argument("--max-blocked-n", type=int, default=16384, help="largest n for chunked_attention (slow beyond)")
    parser.add_argument("--max-backward-n", type=int, default=32768, help="largest n for the tiled backward pass")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-python", help="a Python that can import torch, when this one cannot")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--torch-worker", help=argparse.SUPPRESS)
    parser.add_argument("--attnlib-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        print(json.dumps(torch_worker(json.loads(args.torch_worker))))
        return
    if args.attnlib_worker:
        spec = json.loads(args.attnlib_worker)
        print(json.dumps(measure(argparse.Namespace(**spec), None, spec["threads"] == 1)))
        return

    print(f"python {platform.python_version()}, {os.cpu_count()} CPU(s); load average {os.getloadavg()[0]:.2f} at the start")
    start = time.perf_counter()
    try:
        import threadpoolctl  # noqa: F401

        have_threadpoolctl = True
    except ImportError:
        have_threadpoolctl = False
        print("threadpoolctl is not installed: the one-thread run is a subprocess with the BLAS thread variables set to 1")
    runs: list[dict[str, Any]] = []
    torch_runs: dict[Any, dict[str, Any] | None] = {1: None, None: None}

    def torch_timer(threads: int | None) -> TorchTimer:
        def torch_time(n: int, dtype: str) -> dict[str, Any] | None:
            return time_torch([n], [dtype], threads, args.repeats, args.torch_python)

        return torch_time

    if have_threadpoolctl:
        # one (dtype, n) in both thread settings before the next, so that each pair of rows shares a moment
        runs = measure_interleaved(args, {1: torch_timer(1), None: torch_timer(None)})
    else:
        runs = [measure_in_subprocess(args, 1), measure(args, None, with_memory=False, torch_time=torch_timer(None))]
    report(runs, torch_runs)
    print(f"\n(measured in {time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.2f} at the end)")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "torch": {str(k): v for k, v in torch_runs.items()}}, indent=1))


if __name__ == "__main__":
    main()
