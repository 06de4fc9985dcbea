"""Input checks shared by every public function of attnlib.

Every check raises :class:`ValueError` with a message that names the
argument and its shape, so that a student sees what went wrong instead of
a silent ``nan`` three cells later.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["as_array", "as_matrix", "as_int", "as_positive_int", "as_bool_matrix"]


def as_array(name: str, value: Any, ndim: int | tuple[int, ...], *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``value`` as a float64 array, checking dimensions and finiteness.

    Parameters
    ----------
    name:
        The argument's name, used in error messages.
    value:
        Anything ``numpy.asarray`` accepts (nested lists, ints, arrays).
    ndim:
        The allowed number(s) of dimensions.
    allow_neg_inf:
        Whether ``-inf`` entries are allowed (they are for softmax logits).
    """
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric (a list of numbers or an array); got {type(value).__name__}: {exc}") from None
    if arr.ndim not in allowed:
        want = " or ".join(str(d) for d in allowed)
        raise ValueError(f"{name} must have {want} dimension(s); got shape {arr.shape} with {arr.ndim}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    # the common case in one pass, no diagnostics needed (NaN fails both comparisons)
    if (arr < np.inf).all() if allow_neg_inf else np.isfinite(arr).all():
        return arr
    if np.isnan(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])
        raise ValueError(f"{name} (shape {arr.shape}) contains NaN, first at index {where}")
    bad = np.isposinf(arr) | (np.isneginf(arr) if not allow_neg_inf else False)
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} (shape {arr.shape}) contains {arr[where]}, first at index {where}; entries must be finite")
    return arr


def as_matrix(name: str, value: Any) -> np.ndarray:
    """A finite float64 matrix (2 dimensions)."""
    return as_array(name, value, 2)


def as_int(name: str, value: Any, *, minimum: int | None = None, what: str = "an integer") -> int:
    """An integer given as an int, a numpy integer or an integral finite float.

    ``minimum`` (if given) is the smallest value allowed; ``what`` names the
    expected kind in the error message.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    if not math.isfinite(float(value)) or float(value) != int(value):
        raise ValueError(f"{name} must be {what}; got {value!r}")
    if minimum is not None and int(value) < minimum:
        raise ValueError(f"{name} must be {what}; got {value!r}")
    return int(value)


def as_positive_int(name: str, value: Any) -> int:
    """A positive integer given as an int (or an integral float/np integer)."""
    return as_int(name, value, minimum=1, what="a positive integer")


def as_bool_matrix(name: str, value: Any, shape: tuple[int, int]) -> np.ndarray:
    """A mask as a boolean matrix of ``shape`` with True = may attend.

    Every query row must allow at least one key (otherwise its softmax is
    undefined), so a row of all ``False`` raises :class:`ValueError`.

    Accepts a boolean array, or an additive mask holding only 0 (allowed)
    and -inf (forbidden), the form ``M`` of the source post. A 0/1 number
    array is refused: 0 would mean *allowed* additively but *forbidden* as
    a flag, and guessing would be a silent bug.
    """
    arr = np.asarray(value)
    if arr.dtype != bool:
        num = as_array(name, arr, 2, allow_neg_inf=True)
        if not np.all((num == 0.0) | np.isneginf(num)):
            raise ValueError(
                f"{name} must be boolean (True = may attend) or additive (0 = allowed, -inf = forbidden); "
                f"got the values {np.unique(num)[:5].tolist()}"
            )
        arr = num == 0.0
    if arr.ndim != 2 or arr.shape != tuple(shape):
        raise ValueError(f"{name} has shape {arr.shape} but the scores have shape {tuple(shape)} (queries x keys)")
    empty = np.flatnonzero(~arr.any(axis=1))
    if empty.size:
        raise ValueError(
            f"{name} (shape {arr.shape}) leaves query row {int(empty[0])} "
            f"(0-based; rows {empty.tolist()}) with no key it may attend to; its softmax is undefined"
        )
    return arr
