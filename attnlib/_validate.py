"""Input and result checks shared by every public function of attnlib.

Every check raises :class:`ValueError` with a message that names the
caller's argument, what was expected and what came, so that a student sees
what went wrong instead of a silent ``nan`` three cells later.

The rules, in one place:

* **Arrays** (:func:`as_array`): real numbers only. Complex arrays, ``numpy.ma``
  masked arrays, strings, booleans, dates and ragged nested lists are
  refused; a Python ``int`` too large for float64 is refused as an overflow.
* **Integers** (:func:`as_int`): a Python ``int`` of any size, a numpy integer
  (signed or unsigned), or an integral finite float (``2.0``). ``bool``,
  strings, containers and non-integral floats are refused. Seeds follow the
  same rule (:func:`as_seed`: a non-negative integer; :func:`as_rng` also takes
  a ``numpy.random.Generator``, never ``None``).
* **Real scalars** (:func:`as_real`): an int, a float or a numpy real number;
  not a string, a bool or a complex number.
* **Results** (:func:`finite_result`): every result is finite; a computation
  that overflowed float64 raises a :class:`ValueError` saying so and naming
  the inputs. Floating-point warnings are silenced inside attnlib
  (:func:`quiet`), since every result is checked instead.
* **Names and records** (:func:`as_text`, :func:`as_instance`): a name (a student
  id, a key) is a non-empty ``str``; a record argument (a ``Variant``) is an
  instance of its class, never a look-alike dict.
* **Sizes** (:func:`attnlib._memory.check_size`): an array that could not fit
  in memory is refused before it is allocated, with the number of bytes it
  would need.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "as_array",
    "as_bool_matrix",
    "as_flag",
    "as_instance",
    "as_int",
    "as_int_sequence",
    "as_matrix",
    "as_positive_int",
    "as_positive_real",
    "as_real",
    "as_rng",
    "as_seed",
    "as_text",
    "finite_result",
    "quiet",
    "real_scalar",
    "to_ndarray",
]


def quiet() -> np.errstate:
    """A context in which numpy's floating-point warnings are silent.

    Every public function checks its result with :func:`finite_result`, so a
    warning would only repeat (less clearly) what the error says.
    """
    return np.errstate(all="ignore")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def to_ndarray(name: str, value: Any) -> np.ndarray:
    """``numpy.asarray(value)`` with named errors for what has no clear meaning.

    Refuses ``numpy.ma`` masked arrays (their mask would be ignored), strings
    and ragged nested sequences.
    """
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(
            f"{name} is a numpy.ma masked array; attnlib would ignore its mask. Pass a plain array "
            "(for attention, express the mask with the mask argument)"
        )
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be numeric (a list of numbers or an array); got the string {_describe(value)}")
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        if "inhomogeneous" in text or "sequence" in text:
            raise ValueError(
                f"{name} is ragged: its rows have different lengths (or mix numbers and lists); got {_describe(value)}"
            ) from None
        raise ValueError(f"{name} could not be read as an array ({type(exc).__name__}); got {_describe(value)}") from None


def _real_float_array(name: str, arr: np.ndarray, value: Any) -> np.ndarray:
    kind = arr.dtype.kind
    if kind == "c":
        raise ValueError(f"{name} holds complex numbers (dtype {arr.dtype}); attnlib works with real numbers only")
    if kind == "b":
        raise ValueError(f"{name} holds booleans (dtype bool); give numbers (for a mask, use the mask argument)")
    if kind in "USV":
        raise ValueError(f"{name} must be numeric; got text (dtype {arr.dtype}): {_describe(value)}")
    if kind in "mM":
        raise ValueError(f"{name} must be numeric; got dates or times (dtype {arr.dtype})")
    if kind == "O":
        for index, item in np.ndenumerate(arr):
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, float, np.integer, np.floating)):
                raise ValueError(f"{name}{list(index)} must be a real number; got {type(item).__name__}: {_describe(item)}")
            if isinstance(item, int) and abs(item) >= 2**1024:
                raise ValueError(f"{name}{list(index)} = {_describe(item)} overflowed: it is too large for a float64")
    with quiet():
        out = arr.astype(np.float64)
    return out


def as_array(name: str, value: Any, ndim: int | tuple[int, ...], *, allow_neg_inf: bool = False, allow_empty: bool = False) -> np.ndarray:
    """Return ``value`` as a new float64 array, checking kind, dimensions and finiteness.

    Parameters
    ----------
    name:
        The argument's name, used in error messages.
    value:
        Real numbers: nested lists, ints, floats or a numpy array.
    ndim:
        The allowed number(s) of dimensions.
    allow_neg_inf:
        Whether ``-inf`` entries are allowed (they are for softmax logits).
    allow_empty:
        Whether an array with no entries is allowed.

    Examples
    --------
    >>> as_array("x", [1, 2], 1).tolist()
    [1.0, 2.0]
    >>> as_array("x", [1 + 2j], 1)
    Traceback (most recent call last):
    ...
    ValueError: x holds complex numbers (dtype complex128); attnlib works with real numbers only
    """
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    arr = _real_float_array(name, to_ndarray(name, value), value)
    if arr.ndim not in allowed:
        want = " or ".join(str(d) for d in allowed)
        raise ValueError(f"{name} must have {want} dimension(s); got shape {arr.shape} with {arr.ndim}")
    if arr.size == 0 and not allow_empty:
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
    """An integer: a Python int of any size, a numpy integer or an integral finite float.

    ``bool``, strings, containers and non-integral floats are refused.
    ``minimum`` (if given) is the smallest value allowed; ``what`` names the
    expected kind in the error message.

    Examples
    --------
    >>> as_int("n", 2.0), as_int("n", np.uint64(2**63)), as_int("n", 10**30)
    (2, 9223372036854775808, 1000000000000000000000000000000)
    >>> as_int("n", True)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer; got True (bool)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise ValueError(f"{name} must be {what}; got {_describe(value)} ({type(value).__name__})")
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)) or float(value) != math.floor(float(value)):
            raise ValueError(f"{name} must be {what}; got {_describe(value)}, which is not a whole number")
    number = int(value)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be {what}; got {_describe(value)}")
    return number


def as_positive_int(name: str, value: Any) -> int:
    """A positive integer (see :func:`as_int` for what counts as an integer)."""
    return as_int(name, value, minimum=1, what="a positive integer")


def as_seed(name: str, value: Any) -> int:
    """A random seed: a non-negative integer by the rule of ``as_int`` (so ``3``, ``np.int64(3)`` and ``3.0``).

    Examples
    --------
    >>> as_seed("seed", 3.0)
    3
    """
    return as_int(name, value, minimum=0, what="a non-negative integer seed")


def as_rng(name: str, value: Any) -> np.random.Generator:
    """A random generator from a seed (:func:`as_seed`) or a ``numpy.random.Generator`` (used as it is).

    ``None`` is refused: it would give a run that cannot be repeated.

    Examples
    --------
    >>> float(as_rng("seed", 3.0).random()) == float(np.random.default_rng(3).random())
    True
    >>> as_rng("seed", None)
    Traceback (most recent call last):
    ...
    ValueError: seed must be a non-negative integer seed (or a numpy Generator); got None (NoneType)
    """
    if isinstance(value, np.random.Generator):
        return value
    return np.random.default_rng(as_int(name, value, minimum=0, what="a non-negative integer seed (or a numpy Generator)"))


def as_int_sequence(name: str, values: Any, *, minimum: int = 1, allow_empty: bool = False) -> list[int]:
    """A sequence of integers (non-empty unless ``allow_empty``), each checked by :func:`as_int`.

    Examples
    --------
    >>> as_int_sequence("dims", (1, 2.0))
    [1, 2]
    """
    if isinstance(values, (str, bytes, dict)) or not isinstance(values, (Sequence, np.ndarray, range)):
        raise ValueError(f"{name} must be a list of integers; got {_describe(values)} ({type(values).__name__})")
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ValueError(f"{name} must be a 1-d list of integers; got shape {values.shape}")
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    out = [as_int(f"{name}[{i}]", v, minimum=minimum, what=what) for i, v in enumerate(values)]
    if not out and not allow_empty:
        raise ValueError(f"{name} is empty; give at least one entry")
    return out


def real_scalar(value: Any) -> float | None:
    """``value`` as a float if it is one real number (an int, a float, a numpy real number or a 0-d array
    of one; not a bool), else ``None``. An int beyond float64 is ``None`` too. The rule of :func:`as_real`.

    Examples
    --------
    >>> real_scalar(np.float32(0.5)), real_scalar(True), real_scalar("1"), real_scalar(10**400)
    (0.5, None, None, None)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def as_real(name: str, value: Any) -> float:
    """A real number as a Python float: an int, a float or a numpy real number.

    Strings, bools and complex numbers are refused; an int beyond float64
    raises a :class:`ValueError` saying it overflowed.

    Examples
    --------
    >>> as_real("scale", 2), as_real("scale", np.float32(0.5))
    (2.0, 0.5)
    """
    number = real_scalar(value)
    if number is not None:
        return number
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} = {_describe(value)} overflowed: it is too large for a float64")
    raise ValueError(f"{name} must be a real number; got {_describe(value)} ({type(value).__name__})")


def as_positive_real(name: str, value: Any, *, below: float | None = None, allow_zero: bool = False) -> float:
    """A finite real number (:func:`as_real`) above 0 (or at least 0 with ``allow_zero``), and below ``below`` if given.

    Examples
    --------
    >>> as_positive_real("lr", 0.1)
    0.1
    >>> as_positive_real("beta1", 1.0, below=1.0, allow_zero=True)
    Traceback (most recent call last):
    ...
    ValueError: beta1 must be a finite number in [0, 1); got 1.0
    """
    number = as_real(name, value)
    low_ok = number >= 0 if allow_zero else number > 0
    high_ok = below is None or number < below
    if not (math.isfinite(number) and low_ok and high_ok):
        low = "[0" if allow_zero else "(0"
        high = f"{below:g})" if below is not None else "inf)"
        raise ValueError(f"{name} must be a finite number in {low}, {high}; got {_describe(value)}")
    return number


def as_flag(name: str, value: Any) -> bool:
    """A yes/no option: ``True`` or ``False`` (a numpy bool too), never a string or a number.

    Examples
    --------
    >>> as_flag("bias", np.True_)
    True
    >>> as_flag("bias", "False")
    Traceback (most recent call last):
    ...
    ValueError: bias must be True or False; got 'False' (str)
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {_describe(value)} ({type(value).__name__})")
    return bool(value)


def finite_result(value: Any, what: str, inputs: str, *, allow_neg_inf: bool = False) -> Any:
    """Return ``value`` unchanged if every entry is finite; otherwise raise a :class:`ValueError`.

    ``what`` names the quantity (``"Q K^T"``), ``inputs`` the caller's
    arguments it came from (``"Q and K"``). Finite inputs can only give an
    infinite or NaN result by overflowing float64, so the message says so.

    Examples
    --------
    >>> with quiet():
    ...     finite_result(np.array([1e308]) * 10, "x * 10", "x")
    Traceback (most recent call last):
    ...
    ValueError: x * 10 overflowed float64 (an entry would exceed 1.8e308, first at index (0,)); the inputs x are too large ...
    """
    arr = np.asarray(value)
    if arr.dtype.kind not in "fc":
        return value
    bad = ~np.isfinite(arr)
    if allow_neg_inf:
        bad &= ~np.isneginf(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{what} overflowed float64 (an entry would exceed 1.8e308, first at index {where}); "
            f"the inputs {inputs} are too large for this computation"
        )
    return value


def as_bool_matrix(name: str, value: Any, shape: tuple[int, int]) -> np.ndarray:
    """A mask as a boolean matrix of ``shape`` with True = may attend.

    Every query row must allow at least one key (otherwise its softmax is
    undefined), so a row of all ``False`` raises :class:`ValueError`.

    Accepts a boolean array, or an additive mask holding only 0 (allowed)
    and -inf (forbidden), the form ``M`` of the source post. A 0/1 number
    array is refused: 0 would mean *allowed* additively but *forbidden* as
    a flag, and guessing would be a silent bug.
    """
    arr = to_ndarray(name, value)
    if arr.dtype == object and arr.size and all(isinstance(v, (bool, np.bool_)) for v in arr.flat):
        arr = arr.astype(bool)
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
    return arr.copy()


def as_text(name: str, value: Any) -> str:
    """A non-empty string (a student id, an assignment, a key): not bytes, a number or a list.

    Examples
    --------
    >>> as_text("key", "k")
    'k'
    >>> as_text("key", b"k")
    Traceback (most recent call last):
    ...
    ValueError: key must be a non-empty string, got b'k'
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {_describe(value)}")
    return value


def as_instance(name: str, value: Any, cls: type | tuple[type, ...], what: str) -> Any:
    """``value`` unchanged if it is an instance of ``cls``; otherwise a ValueError naming ``name`` and ``what`` was expected.

    Examples
    --------
    >>> as_instance("sink", [], list, "None or a list")
    []
    >>> as_instance("sink", (), list, "None or a list")
    Traceback (most recent call last):
    ...
    ValueError: sink must be None or a list, got () (tuple)
    """
    if not isinstance(value, cls):
        raise ValueError(f"{name} must be {what}, got {_describe(value)} ({type(value).__name__})")
    return value
