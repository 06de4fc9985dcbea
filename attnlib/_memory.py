"""Refuse an array that could not fit in this machine's memory, before it is allocated.

Every attnlib function that allocates an array whose size the caller chooses calls
:func:`check_size` first, so that ``causal_mask(10**7)`` is a clear ``ValueError``
with the bytes it would need instead of an out-of-memory crash.
"""

from __future__ import annotations

import os
import re

from .formatting import bytes_text

__all__ = ["MAX_ARRAY_BYTES", "check_size"]


def _memory_limit() -> int:
    """Physical memory of this machine in bytes (8 GiB when it cannot be read)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 8 * 1024**3


#: Largest array (in bytes) attnlib will try to allocate: the machine's physical memory.
MAX_ARRAY_BYTES: int = _memory_limit()


def check_size(what: str, n_entries: int, bytes_per_entry: int = 8) -> None:
    """Refuse an array of ``n_entries`` entries that could not fit in memory (:data:`MAX_ARRAY_BYTES`).

    Examples
    --------
    >>> check_size("causal_mask(n=10**7): an n x n boolean matrix", 10**14, 1)
    Traceback (most recent call last):
    ...
    ValueError: causal_mask(n=10**7): an n x n boolean matrix would need 90.9 TiB of memory, more than this machine has ...
    """
    need = int(n_entries) * int(bytes_per_entry)
    if need > MAX_ARRAY_BYTES:
        what = re.sub(r"\d{16,}", lambda m: f"{int(m.group()[:3]) / 100:.2f}e+{len(m.group()) - 1}", what)
        raise ValueError(f"{what} would need {bytes_text(need)} of memory, more than this machine has ({bytes_text(MAX_ARRAY_BYTES)})")
