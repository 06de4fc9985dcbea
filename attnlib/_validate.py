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
* **The scale** (:func:`as_scale`): what the scores are divided by, in one
  vocabulary for every function and explorer: :data:`SQRT_D_K` (``sqrt(d_k)``,
  the default), :data:`NO_SCALING` (1) or a positive number. The old spellings
  ``True`` and ``False`` are aliases of the two words for one release (no warning).
* **The mask** (:func:`as_mask`): one grammar for every function that takes a
  mask: ``None``, :data:`CAUSAL`, a function ``allowed(i, j)``, a boolean matrix
  (``True`` = may attend) or an additive one (0 = allowed, ``-inf`` = forbidden).
  The old texts ``"causal"`` and ``"none"`` are aliases for one release (no warning).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "CAUSAL",
    "MASK_FORMS",
    "NO_SCALING",
    "SCALE_FORMS",
    "SQRT_D_K",
    "Word",
    "as_array",
    "as_bool_matrix",
    "as_flag",
    "as_instance",
    "as_int",
    "as_int_sequence",
    "as_labels",
    "as_mask",
    "as_matrix",
    "as_positive_int",
    "as_positive_real",
    "as_real",
    "as_rng",
    "as_scale",
    "as_seed",
    "as_text",
    "divisor_of",
    "finite_result",
    "holds_bool",
    "mask_tile",
    "quiet",
    "real_scalar",
    "refuse_empty_rows",
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


def holds_bool(value: Any) -> bool:
    """Whether nested lists or tuples hold a boolean (Python's, numpy's, or a boolean array), which numpy turns into 1.0."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and item.dtype == bool):
            return True
    return False


def _real_float_array(name: str, arr: np.ndarray, value: Any) -> np.ndarray:
    kind = arr.dtype.kind
    if kind in "iuf" and isinstance(value, (list, tuple)) and holds_bool(value):
        raise ValueError(
            f"{name} holds booleans mixed with numbers: {_describe(value)}; give numbers only (for a mask, use the mask argument)"
        )
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


def as_labels(name: str, value: Any, n: int) -> list[str]:
    """``n`` labels (of rows or columns): a list, tuple or 1-d array, each entry shown as its ``str``.

    Raises
    ------
    ValueError
        ``value`` is a string, bytes, a dict, a number or another non-sequence, or has not ``n`` entries; the message
        names ``name``.

    Examples
    --------
    >>> as_labels("labels", ("x1", 2), 2)
    ['x1', '2']
    """
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a list of {n} labels; got {_describe(value)} ({type(value).__name__})")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name} must be a 1-d list of {n} labels; got shape {value.shape}")
    if len(value) != n:
        raise ValueError(f"{name} has {len(value)} labels but {n} are needed; got {_describe(value)}")
    return [str(v) for v in value]


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


def as_bool_matrix(name: str, value: Any, shape: tuple[int, int], *, allow_empty_rows: bool = False) -> np.ndarray:
    """A mask given as a matrix, as a new boolean matrix of ``shape`` with True = may attend (see :func:`as_mask`).

    Accepts a boolean array, or an additive mask holding only 0 (allowed) and -inf (forbidden), the
    form ``M`` of the source post. A 0/1 number array is refused: 0 would mean *allowed* additively
    but *forbidden* as a flag, and guessing would be a silent bug. Every query row must allow at least
    one key (otherwise its softmax is undefined) unless ``allow_empty_rows``.

    Raises
    ------
    ValueError
        ``value`` is not such a matrix (text, complex, ``numpy.ma``, a ragged list, numbers other than 0 and ``-inf``),
        has another shape, or leaves a row with no key; the message names ``name``.
    """
    arr = to_ndarray(name, value)
    if arr.dtype == object and arr.size and all(isinstance(v, (bool, np.bool_)) for v in arr.flat):
        arr = arr.astype(bool)
    if arr.dtype != bool:
        try:
            num = as_array(name, arr, 2, allow_neg_inf=True)
        except ValueError as exc:
            raise ValueError(f"{exc} ({name} must be {MASK_FORMS})") from None
        if not np.all((num == 0.0) | np.isneginf(num)):
            raise ValueError(
                f"{name} must be boolean (True = may attend) or additive (0 = allowed, -inf = forbidden); "
                f"got the values {np.unique(num)[:5].tolist()}"
            )
        arr = num == 0.0
    if arr.ndim != 2 or arr.shape != tuple(shape):
        raise ValueError(f"{name} has shape {arr.shape} but the scores have shape {tuple(shape)} (queries x keys)")
    if not allow_empty_rows:
        refuse_empty_rows(name, ~arr.any(axis=1), arr.shape)
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


# --- the vocabulary: named values that several functions and the explorers take -------------------------------


class Word:
    """A named value of attnlib's vocabulary (:data:`SQRT_D_K`, :data:`NO_SCALING`, :data:`CAUSAL`).

    It is shown by its public name, compared by identity, and stays the same object through
    ``copy``, ``deepcopy`` and ``pickle``, so ``scale is NO_SCALING`` always works.

    Examples
    --------
    >>> NO_SCALING, SQRT_D_K
    (attnlib.NO_SCALING, attnlib.SQRT_D_K)
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"attnlib.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickled by name: unpickling gives this module's object again

    def __copy__(self) -> Word:
        return self

    def __deepcopy__(self, memo: dict) -> Word:
        return self


class _Causal(Word):
    """:data:`CAUSAL`: a mask function too, ``CAUSAL(i, j) = j <= i``."""

    __slots__ = ()

    def __call__(self, i: Any, j: Any) -> np.ndarray:
        return np.asarray(j) <= np.asarray(i)


#: ``scale=SQRT_D_K``: divide the scores by ``sqrt(d_k)`` (the default everywhere).
SQRT_D_K = Word("SQRT_D_K")
#: ``scale=NO_SCALING``: do not divide the scores (divide by 1).
NO_SCALING = Word("NO_SCALING")
#: ``mask=CAUSAL``: query ``i`` may attend to key ``j`` when ``j <= i``; the tiled functions skip the tiles it forbids.
CAUSAL = _Causal("CAUSAL")

#: What ``scale`` may be (the text of every refusal).
SCALE_FORMS = "attnlib.SQRT_D_K (divide by sqrt(d_k)), attnlib.NO_SCALING or a positive number to divide by"
#: What ``mask`` may be (the text of every refusal).
MASK_FORMS = (
    "None, attnlib.CAUSAL, a function allowed(i, j) returning booleans, or a boolean (n_q, n_k) matrix "
    "(True = may attend) or an additive one (0 = allowed, -inf = forbidden)"
)


def as_scale(name: str, value: Any, number: Callable[[str, Any], Any] | None = None) -> Any:
    """The scale in attnlib's one vocabulary: :data:`SQRT_D_K`, :data:`NO_SCALING` or a positive number.

    ``True`` and ``False``, the old spellings, are aliases of :data:`SQRT_D_K` and :data:`NO_SCALING`
    (kept for one release, without a warning). A number is read by ``number`` (default: a finite
    float above 0; :mod:`attnlib.exact` reads sympy numbers).

    Raises
    ------
    ValueError
        ``value`` is none of these (``None``, a string, a complex number, 0, a negative or a non-finite number, a
        container), naming ``name``.

    Examples
    --------
    >>> as_scale("scale", True), as_scale("scale", NO_SCALING), as_scale("scale", 2)
    (attnlib.SQRT_D_K, attnlib.NO_SCALING, 2.0)
    >>> as_scale("scale", "none")
    Traceback (most recent call last):
    ...
    ValueError: scale must be attnlib.SQRT_D_K (divide by sqrt(d_k)), attnlib.NO_SCALING or a positive number to divide by; got 'none'
    """
    if value is SQRT_D_K or value is NO_SCALING:
        return value
    if isinstance(value, (bool, np.bool_)):
        return SQRT_D_K if value else NO_SCALING
    if number is not None:
        try:
            return number(name, value)
        except ValueError:
            raise ValueError(f"{name} must be {SCALE_FORMS}; got {_describe(value)}") from None
    found = real_scalar(value)
    if found is None or not (math.isfinite(found) and found > 0):
        raise ValueError(f"{name} must be {SCALE_FORMS}; got {_describe(value)}")
    return found


def divisor_of(scale: Any, d_k: int) -> float:
    """What the scores are divided by for a checked ``scale`` (:func:`as_scale`) and the width ``d_k``.

    Examples
    --------
    >>> divisor_of(SQRT_D_K, 4), divisor_of(NO_SCALING, 4), divisor_of(3.0, 4)
    (2.0, 1.0, 3.0)
    """
    if scale is SQRT_D_K:
        return math.sqrt(d_k)
    if scale is NO_SCALING:
        return 1.0
    return float(scale)


def refuse_empty_rows(name: str, empty: np.ndarray, shape: tuple[int, int]) -> None:
    """Raise the one error for query rows that may attend to no key (``empty``: a boolean per row).

    Raises
    ------
    ValueError
        Some row is empty: its softmax is undefined. The message names ``name`` and the rows.
    """
    rows = np.flatnonzero(empty)
    if rows.size:
        listed = rows[:20].tolist()
        more = f" and {rows.size - 20} more" if rows.size > 20 else ""
        raise ValueError(
            f"{name} (shape {tuple(shape)}) leaves query row {int(rows[0])} "
            f"(0-based; rows {listed}{more}) with no key it may attend to; its softmax is undefined"
        )


def mask_tile(name: str, mask: Callable[..., Any], rows: tuple[int, int], keys: tuple[int, int]) -> np.ndarray | None:
    """The allowed pattern of a mask function on the query rows ``rows`` and key columns ``keys`` (``(start, stop)``).

    :data:`CAUSAL` is computed here (``None`` when the tile is all allowed); any other function is
    called as ``mask(i, j)`` with ``i`` a column of row indices (shape ``(rows, 1)``) and ``j`` a row
    of key indices (shape ``(1, keys)``), and must return booleans that broadcast to the tile.

    Raises
    ------
    ValueError
        The function raised, returned something that is not booleans, or a shape that does not broadcast to the tile;
        the message names ``name``.

    Examples
    --------
    >>> mask_tile("mask", CAUSAL, (0, 2), (0, 3)).tolist()
    [[True, False, False], [True, True, False]]
    >>> mask_tile("mask", CAUSAL, (3, 5), (0, 3)) is None
    True
    """
    (r0, r1), (c0, c1) = rows, keys
    if mask is CAUSAL and c1 - 1 <= r0:
        return None
    i = np.arange(r0, r1)[:, None]
    j = np.arange(c0, c1)[None, :]
    if mask is CAUSAL:
        return j <= i
    try:
        with quiet():
            got = np.asarray(mask(i, j))
    except Exception as exc:  # noqa: BLE001 - the caller's function: whatever it raised is named
        raise ValueError(f"{name}(i, j) raised {type(exc).__name__}: {exc} (i is a column of row indices, j a row of key indices)") from exc
    if got.dtype != bool:
        raise ValueError(f"{name}(i, j) must return booleans (True = may attend); got dtype {got.dtype}")
    try:
        return np.broadcast_to(got, (r1 - r0, c1 - c0))
    except ValueError:
        raise ValueError(
            f"{name}(i, j) returned shape {got.shape}, which does not broadcast to the tile's {(r1 - r0, c1 - c0)} "
            "(i has shape (rows, 1), j has shape (1, keys))"
        ) from None


def as_mask(name: str, value: Any, shape: tuple[int, int], *, lazy: bool = False, allow_empty_rows: bool = False) -> Any:
    """A mask in attnlib's one grammar, for scores of ``shape`` (queries x keys).

    The forms: ``None`` (every query may attend to every key); :data:`CAUSAL` (key ``j`` when
    ``j <= i``); a function ``allowed(i, j)`` (see :func:`mask_tile`); a boolean matrix of ``shape``
    (``True`` = may attend); an additive matrix of 0 (allowed) and ``-inf`` (forbidden), the ``M`` of
    the source post. A 0/1 number matrix is refused: 0 would mean *allowed* additively but
    *forbidden* as a flag. The texts ``"causal"`` and ``"none"``, old spellings, are aliases of
    :data:`CAUSAL` and ``None`` for one release (no warning).

    Returns ``None`` for no mask, else a new boolean matrix of ``shape``; with ``lazy=True``,
    :data:`CAUSAL` and a function are returned as they are (the tiled functions evaluate them tile
    by tile with :func:`mask_tile`, and check the empty rows as they go). A row that may attend to no
    key is refused unless ``allow_empty_rows`` (the explorers show a message for it instead).

    Raises
    ------
    ValueError
        ``value`` is none of the forms, has the wrong shape, a function misbehaves, or a row may attend to no key; the
        message names ``name``.

    Examples
    --------
    >>> as_mask("mask", CAUSAL, (2, 3)).tolist()
    [[True, False, False], [True, True, False]]
    >>> as_mask("mask", [[0.0, -np.inf]], (1, 2)).tolist()
    [[True, False]]
    >>> as_mask("mask", lambda i, j: j != 1, (1, 2)).tolist()
    [[True, False]]
    """
    if isinstance(value, str):
        if value not in ("causal", "none"):
            raise ValueError(f"{name} must be {MASK_FORMS}; got the text {_describe(value)}")
        value = CAUSAL if value == "causal" else None
    if value is None:
        return None
    n_q, n_k = shape
    if callable(value) and not isinstance(value, np.ndarray):
        if lazy:
            return value
        from ._memory import check_size

        check_size(f"the mask of {n_q} queries x {n_k} keys, a boolean matrix,", n_q * n_k, 1)
        tile = mask_tile(name, value, (0, n_q), (0, n_k)) if n_q and n_k else None
        allowed = np.ones(shape, bool) if tile is None else np.array(tile)  # None: every key allowed
        if not allow_empty_rows:
            refuse_empty_rows(name, ~allowed.any(axis=1), shape)
        return allowed
    return as_bool_matrix(name, value, shape, allow_empty_rows=allow_empty_rows)
