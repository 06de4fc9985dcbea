"""Measuring on this machine: time, peak memory and power-law fits.

Time is the median of a few calls, wall-clock (``time.perf_counter``) or CPU time (``time.process_time``);
peak memory is the largest amount of memory allocated *during* a call,
recorded by ``tracemalloc`` (numpy reports its array buffers to it), so
arrays made before the call, such as the inputs, do not count. A power law
``y = c n^p`` is a straight line on log-log axes; :func:`fit_power_law`
finds ``p`` by least squares on the logarithms. :func:`cache_sizes` reads the sizes of the
processor's caches, which decide where the traffic of :mod:`attnlib.cost` goes, at run time.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ._memory import check_size
from ._validate import as_array, as_int_sequence, as_positive_int, as_real, as_seed, finite_result, quiet
from .blocked import chunked_attention
from .core import attention

__all__ = [
    "CLOCKS",
    "CPU_CACHE_DIR",
    "CacheLevel",
    "Measurement",
    "PowerLawFit",
    "cache_sizes",
    "fit_power_law",
    "measure_attention",
    "median_seconds",
    "peak_memory_bytes",
]

#: Where Linux describes the caches of the first CPU, one ``index*`` directory per cache.
CPU_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


class CacheLevel(NamedTuple):
    """One cache of the processor that runs this code, as the operating system reports it."""

    level: int
    kind: str
    size_bytes: int
    shared_by: int


def _cpu_count(cpu_list: str) -> int:
    """How many CPUs a list such as ``"0"``, ``"0-1"`` or ``"0-3,8-11"`` names."""
    count = 0
    for part in cpu_list.strip().split(","):
        first, _, last = part.partition("-")
        count += int(last or first) - int(first) + 1
    return count


def cache_sizes(root: str | os.PathLike = CPU_CACHE_DIR) -> list[CacheLevel]:
    """The caches of the machine that runs this code, read at run time (Linux reports them under ``root``).

    Each ``index*`` directory describes one cache of the first CPU: its level, its type (``Data``,
    ``Instruction`` or ``Unified``), its size (``32K``, ``1024K``, ``32M``) and the CPUs that share it
    (``0-1``: two). Where the operating system does not report them (macOS, Windows, the browser's
    Python) the list is empty: the sizes are then unknown, not guessed.

    Raises
    ------
    ValueError
        ``root`` is not a path (a ``str`` or ``os.PathLike``). The message names the argument. A path that names no
        cache directory, or one the system describes only in part, is not an error: it gives fewer caches or none.

    Examples
    --------
    >>> isinstance(cache_sizes(), list), cache_sizes("/no/such/directory")
    (True, [])
    """
    if not isinstance(root, (str, os.PathLike)):
        raise ValueError(f"root must be a directory path (text); got {type(root).__name__}")
    found = []
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
    try:
        entries = sorted(Path(root).glob("index*"))
    except (OSError, ValueError):
        return []
    for entry in entries:
        try:
            level = int((entry / "level").read_text().strip())
            kind = (entry / "type").read_text().strip()
            size = re.fullmatch(r"(\d+)\s*([KMG]?)", (entry / "size").read_text().strip())
            shared = _cpu_count((entry / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue  # a cache the system describes only in part is left out
        if size is not None:
            found.append(CacheLevel(level, kind, int(size[1]) * units[size[2]], shared))
    return sorted(found, key=lambda c: (c.level, c.kind))


@dataclass(frozen=True)
class PowerLawFit:
    """The least-squares fit ``y = prefactor * n ** exponent`` on log-log axes.

    Attributes
    ----------
    exponent:
        The slope of ``log y`` against ``log n``.
    prefactor:
        ``y`` at ``n = 1`` according to the fit.
    """

    exponent: float
    prefactor: float

    def __post_init__(self) -> None:
        exponent = as_real("exponent", self.exponent)
        prefactor = as_real("prefactor", self.prefactor)
        if not (np.isfinite(exponent) and np.isfinite(prefactor)):
            raise ValueError(f"exponent and prefactor must be finite; got {self.exponent!r} and {self.prefactor!r}")
        object.__setattr__(self, "exponent", exponent)
        object.__setattr__(self, "prefactor", prefactor)

    def predict(self, n: Any) -> np.ndarray:
        """The fitted ``y`` at ``n``.

        Raises
        ------
        ValueError
            ``n`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error names
            the inputs it came from). The message names the argument.

        Examples
        --------
        >>> PowerLawFit(2.0, 4.0).predict([1, 10]).tolist()
        [4.0, 400.0]
        """
        x = as_array("n", n, (0, 1))
        if np.any(x <= 0):
            raise ValueError(f"n must hold positive sizes (a power law is fitted for n > 0); got {x.tolist()}")
        with quiet():
            return finite_result(self.prefactor * x**self.exponent, "prefactor * n ** exponent", "n (and the fit)")


def fit_power_law(n: Any, y: Any) -> PowerLawFit:
    """Fit ``y = c n^p`` by least squares on ``log n`` and ``log y``.

    Parameters
    ----------
    n, y:
        At least two positive sizes (not all equal) and the positive values measured at them.

    Raises
    ------
    ValueError
        ``n`` or ``y`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> fit = fit_power_law([512, 1024, 2048], [4 * 512**2, 4 * 1024**2, 4 * 2048**2])
    >>> round(fit.exponent, 6), round(fit.prefactor, 6)
    (2.0, 4.0)
    """
    x = as_array("n", n, 1)
    v = as_array("y", y, 1)
    if x.shape != v.shape:
        raise ValueError(f"n and y need the same length; got {x.shape[0]} and {v.shape[0]}")
    if x.shape[0] < 2 or np.all(x == x[0]):
        raise ValueError(f"a power law needs at least two different sizes n; got {x.tolist()}")
    if np.any(x <= 0) or np.any(v <= 0):
        raise ValueError("n and y must be positive (their logarithms are fitted)")
    with quiet():  # a prefactor beyond float64 (n = 1e-10 ... 1e-5 with y = 1e-300 ... 1e300) is refused, not warned about
        slope, intercept = np.polyfit(np.log(x), np.log(v), 1)
        fit = finite_result(np.array([slope, np.exp(intercept)]), "the fitted exponent and prefactor c = exp(intercept)", "n and y")
    return PowerLawFit(float(fit[0]), float(fit[1]))


def peak_memory_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Largest memory allocated while ``fn(*args, **kwargs)`` runs, in bytes (``tracemalloc``).

    Raises
    ------
    ValueError
        ``fn`` is not a function. The message names the argument.

    Examples
    --------
    >>> peak_memory_bytes(np.zeros, 1_000_000) >= 8_000_000
    True
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function; got {type(fn).__name__}")
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return max(0, peak - before)


#: The clocks :func:`median_seconds` can read: elapsed (wall-clock) time, or the CPU time of this process
#: (all its threads), which other programs running on the same machine disturb much less.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


#: Most calls :func:`median_seconds` and :func:`measure_attention` make per measurement.
MAX_REPEATS = 1000


def _check_repeats(repeats: Any) -> int:
    repeats = as_positive_int("repeats", repeats)
    if repeats > MAX_REPEATS:
        raise ValueError(f"repeats must be from 1 to {MAX_REPEATS} (each repeat is a timed call); got {repeats}")
    return repeats


def median_seconds(fn: Callable[..., Any], *args: Any, repeats: int = 3, clock: str = "wall", **kwargs: Any) -> float:
    """Median time of ``repeats`` calls of ``fn(*args, **kwargs)``, in seconds, on the clock ``clock``.

    ``clock="wall"`` measures elapsed time; ``clock="cpu"`` the processor
    time this process spent (see :data:`CLOCKS`).

    Raises
    ------
    ValueError
        ``fn`` is not a function; ``repeats`` is not a positive integer; ``clock`` is not one of the values it may take.
        The message names the argument.

    Examples
    --------
    >>> median_seconds(sum, [1, 2, 3], repeats=3) >= 0
    True
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function; got {type(fn).__name__}")
    repeats = _check_repeats(repeats)
    if not isinstance(clock, str) or clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}; got {clock!r}")
    now = CLOCKS[clock]
    times = []
    for _ in range(repeats):
        start = now()
        fn(*args, **kwargs)
        times.append(now() - start)
    return float(np.median(times))


@dataclass(frozen=True)
class Measurement:
    """Time and peak memory of the dense and the blocked attention at one length ``n``.

    Attributes
    ----------
    n:
        Sequence length (self-attention, ``n`` queries and keys).
    dense_seconds, blocked_seconds:
        Median times of :func:`attnlib.core.attention` and :func:`attnlib.blocked.chunked_attention`.
    dense_peak, blocked_peak:
        Their peak memory in bytes.
    max_difference:
        The largest absolute difference between their outputs.
    """

    n: int
    dense_seconds: float
    blocked_seconds: float
    dense_peak: int
    blocked_peak: int
    max_difference: float


@contextlib.contextmanager
def _blas_threads(threads: int | None) -> Iterator[None]:
    """Limit the BLAS library to ``threads`` threads inside the block (None: leave it alone)."""
    if threads is None:
        yield
        return
    threads = as_positive_int("blas_threads", threads)
    if threads > 4096:
        raise ValueError(f"blas_threads must be a number of threads from 1 to 4096; got {threads}")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if sys.platform == "emscripten":  # Pyodide (JupyterLite): numpy's BLAS has no threads there
            yield
            return
        raise ValueError("blas_threads needs the package threadpoolctl (pip install threadpoolctl)") from None
    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def _dense_output(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> np.ndarray:
    return attention(Q, K, V).output


def measure_attention(
    lengths: Sequence[int],
    d_k: int = 64,
    block_size: int = 128,
    repeats: int = 3,
    seed: int = 0,
    clock: str = "wall",
    blas_threads: int | None = None,
) -> list[Measurement]:
    """Time and peak memory of dense and blocked attention for each ``n`` in ``lengths`` (float64).

    Queries, keys and values are seeded standard-normal ``(n, d_k)`` arrays;
    times are read on ``clock`` (``"wall"`` or ``"cpu"``, see :func:`median_seconds`).
    ``blas_threads=1`` runs the matrix products on one thread (with
    threadpoolctl), which makes timings on a machine shared with other
    programs much steadier; ``None`` keeps the BLAS library's own choice.
    Memory is measured in one separate call of each (tracemalloc slows
    allocation down, so timed calls run without it).

    Raises
    ------
    ValueError
        ``lengths`` is not a list of integers in their range; ``d_k``, ``block_size`` or ``repeats`` is not a positive
        integer; ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``);
        ``clock`` is not one of the values it may take; ``blas_threads`` is neither ``None`` nor a positive integer. The
        message names the argument.

    Examples
    --------
    >>> [row.n for row in measure_attention([16, 32], d_k=4, block_size=8, repeats=1)]
    [16, 32]
    """
    sizes = as_int_sequence("lengths", lengths)
    d_k = as_positive_int("d_k", d_k)
    block_size = as_positive_int("block_size", block_size)
    repeats = _check_repeats(repeats)
    if not isinstance(clock, str) or clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}; got {clock!r}")
    for n in sizes:  # every length is refused before anything is allocated
        # Q, K, V (n x d_k) and the dense pass's scores, scaled scores and weights (n x n)
        check_size(f"measure_attention(lengths=[{n}], d_k={d_k}): the inputs and the n x n scores", 3 * n * d_k + 3 * n * n)
    rng = np.random.default_rng(as_seed("seed", seed))
    rows = []
    with _blas_threads(blas_threads):
        for n in sizes:
            Q, K, V = (rng.standard_normal((n, d_k)) for _ in range(3))
            blocked_kw = {"block_size": block_size}
            difference = float(np.abs(_dense_output(Q, K, V) - chunked_attention(Q, K, V, **blocked_kw)).max())
            rows.append(
                Measurement(
                    n,
                    median_seconds(_dense_output, Q, K, V, repeats=repeats, clock=clock),
                    median_seconds(chunked_attention, Q, K, V, repeats=repeats, clock=clock, **blocked_kw),
                    peak_memory_bytes(_dense_output, Q, K, V),
                    peak_memory_bytes(chunked_attention, Q, K, V, **blocked_kw),
                    difference,
                )
            )
    return rows
