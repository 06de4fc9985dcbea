"""Dense against blocked attention on long sequences: time, peak memory, fitted exponents.

Run from the repository root (it takes a few minutes and up to about 9 GB of memory at n = 16,384):

    nice .venv/bin/python benchmarks/long_sequences.py            # n = 256 ... 16,384
    nice .venv/bin/python benchmarks/long_sequences.py --max-n 4096

For each n (d_k = 64, float64, seeded standard-normal Q, K, V) it measures with
``attnlib.measure.measure_attention`` the median time of ``attnlib.attention`` (dense, the
whole n x n score matrix) and of ``attnlib.blocked.chunked_attention`` (keys in blocks of
128 with an online softmax), and the peak memory of each call (tracemalloc). Then it fits
power laws ``c n^p`` with ``attnlib.measure.fit_power_law`` and checks the goals of the
long-sequences chapter:

* both time exponents close to 2 (fitted on n >= 2048, where fixed overheads no longer count);
* the blocked peak memory grows about linearly (exponent <= 1.2) and is at least 50x smaller
  than the dense one at n = 16,384;
* the blocked time is within 2x of the dense time at n = 4,096.

The dense run is skipped (and said so) at any n whose predicted peak (the last measured peak per
n x n float64 array, times n^2) exceeds 60 % of the memory the machine reports as available.
This is a measurement script, not a test: it prints its table and never fails on it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attnlib.cost import blocked_working_set_bytes, format_bytes, score_matrix_bytes  # noqa: E402
from attnlib.measure import fit_power_law, measure_attention  # noqa: E402

D_K = 64


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-n", type=int, default=16384)
    parser.add_argument("--block-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--blas-threads", type=int, help="run the matrix products on this many threads (default: numpy's own choice)")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()

    lengths = [n for n in (256, 512, 1024, 2048, 4096, 8192, 16384) if n <= args.max_n]
    threads = "numpy's default" if args.blas_threads is None else args.blas_threads
    print(f"python {platform.python_version()}, {os.cpu_count()} CPU(s), BLAS threads: {threads}")
    print(f"d_k = {D_K}, float64, block size {args.block_size}")
    header = (
        f"{'n':>6} | {'dense s':>9} | {'blocked s':>9} | {'time ratio':>10} | "
        f"{'dense peak':>11} | {'blocked peak':>12} | {'memory ratio':>12} | max |diff|"
    )
    print(header)
    print("-" * len(header))
    rows = []
    start = time.perf_counter()
    for n in lengths:
        free = available_bytes()
        # the dense peak is a few n x n arrays; scale the last measured one (or assume six)
        arrays_now = rows[-1].dense_peak / score_matrix_bytes(rows[-1].n, "float64") if rows else 6.0
        predicted_dense = arrays_now * score_matrix_bytes(n, dtype="float64")
        if free is not None and predicted_dense > 0.6 * free:
            print(f"{n:>6} | dense skipped: it needs about {format_bytes(predicted_dense)}, {format_bytes(free)} available")
            continue
        (row,) = measure_attention([n], d_k=D_K, block_size=args.block_size, repeats=args.repeats, blas_threads=args.blas_threads)
        rows.append(row)
        print(
            f"{n:>6} | {row.dense_seconds:9.4f} | {row.blocked_seconds:9.4f} | {row.blocked_seconds / row.dense_seconds:10.2f} | "
            f"{format_bytes(row.dense_peak):>11} | {format_bytes(row.blocked_peak):>12} | "
            f"{row.dense_peak / row.blocked_peak:12.1f} | {row.max_difference:.1e}",
            flush=True,
        )
    print(f"(measured in {time.perf_counter() - start:.0f} s)")
    if len(rows) < 2:
        return

    ns = [r.n for r in rows]
    large = [r for r in rows if r.n >= 2048]
    fits = {
        "dense time (all n)": fit_power_law(ns, [r.dense_seconds for r in rows]),
        "blocked time (all n)": fit_power_law(ns, [r.blocked_seconds for r in rows]),
        "dense peak memory": fit_power_law(ns, [r.dense_peak for r in rows]),
        "blocked peak memory": fit_power_law(ns, [r.blocked_peak for r in rows]),
    }
    if len(large) >= 2:
        fits["dense time (n >= 2048)"] = fit_power_law([r.n for r in large], [r.dense_seconds for r in large])
        fits["blocked time (n >= 2048)"] = fit_power_law([r.n for r in large], [r.blocked_seconds for r in large])
    print("\nfitted exponents p of c * n^p:")
    for name, fit in fits.items():
        print(f"  {name:<26} {fit.exponent:.2f}")
    model = {r.n: blocked_working_set_bytes(r.n, D_K, args.block_size, dtype="float64", input_copies=True) for r in rows}
    print("blocked peak / attnlib.cost.blocked_working_set_bytes: " + ", ".join(f"{r.blocked_peak / model[r.n]:.3f}" for r in rows))
    per_matrix = [r.dense_peak / score_matrix_bytes(r.n, "float64") for r in rows]
    print("dense peak / one n x n float64 score matrix: " + ", ".join(f"{x:.2f}" for x in per_matrix))

    print("\ngoals:")
    by_n = {r.n: r for r in rows}
    for key in ("dense time (n >= 2048)", "blocked time (n >= 2048)"):
        if key in fits:
            p = fits[key].exponent
            print(f"  {key} exponent close to 2: {p:.2f} -> {'met' if 1.7 <= p <= 2.3 else 'NOT met'}")
    p = fits["blocked peak memory"].exponent
    print(f"  blocked memory exponent <= 1.2: {p:.2f} -> {'met' if p <= 1.2 else 'NOT met'}")
    if 16384 in by_n:
        ratio = by_n[16384].dense_peak / by_n[16384].blocked_peak
        print(f"  blocked memory >= 50x smaller at n = 16384: {ratio:.0f}x -> {'met' if ratio >= 50 else 'NOT met'}")
    else:
        print("  blocked memory >= 50x smaller at n = 16384: not measured")
    if 4096 in by_n:
        ratio = by_n[4096].blocked_seconds / by_n[4096].dense_seconds
        print(f"  blocked time within 2x of dense at n = 4096: {ratio:.2f}x -> {'met' if ratio <= 2 else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1))


if __name__ == "__main__":
    main()
