"""One BLAS thread, for work that brings its own parallelism (threads or processes).

numpy's OpenBLAS starts one thread per core for every large enough product. Where attnlib
already runs several threads (:func:`attnlib.blocked.flash_attention`'s workers) or processes
(:func:`attnlib.induction.book_runs`) side by side, those BLAS threads only compete for the same
cores: two training processes on two cores, each with OpenBLAS's two threads, took 9.6-11.9 s
of CPU for what one thread each did in 7.5 s, with the same results to the last bit (measured
2026-12-02, 4 seeds of 300 steps).
"""

from __future__ import annotations

import contextlib
from typing import Any


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS uses one thread (nothing to limit without threadpoolctl).

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float((np.ones((2, 2)) @ np.ones((2, 2)))[0, 0])
    2.0
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency (not on Pyodide, which has no threads)
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
