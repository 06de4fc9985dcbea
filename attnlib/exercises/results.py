"""What a self-check returns, and the one set of tolerances every verdict uses.

The self-checks (:mod:`attnlib.exercises.cases`), ``check_by_hand`` (:mod:`attnlib.exercises.by_hand`)
and the grader (:mod:`attnlib.exercises.grading`) all compare with these tolerances; they are defined
here and nowhere else.

Examples
--------
>>> ATOL, RTOL, TOLERANCE
(1e-06, 1e-06, 0.0005)
>>> bool(CheckResult("softmax", 2, 2)), bool(CheckResult("softmax", 2, 1))
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ATOL", "CLOSE", "DECIMALS", "RTOL", "TOLERANCE", "ByHandResult", "CheckFailed", "CheckResult"]

#: Absolute and relative tolerance of a function's result against attnlib's (implement exercises).
ATOL = 1e-6
RTOL = 1e-6

#: Decimals a by-hand answer is typed with, and the tolerance that allows for it (by-hand and measured answers).
DECIMALS = 4
TOLERANCE = 5e-4

#: Differences up to which a typed number counts as "close" (rounded too early or too coarsely), not as wrong.
CLOSE = 0.0051


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one self-check.

    Attributes
    ----------
    name:
        What was checked (for example ``"softmax"``).
    n_cases:
        How many cases were tried.
    n_passed:
        How many of them your function got right.
    messages:
        One message per failed case: the case, what went wrong, a hint.
    notes:
        Remarks that are not failures (for example, that your function
        printed many lines, shown here once instead of in full).
    """

    name: str
    n_cases: int
    n_passed: int
    messages: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        """True when every case passed."""
        return self.n_cases > 0 and self.n_passed == self.n_cases

    def __bool__(self) -> bool:
        return self.passed

    def require(self) -> None:
        """Raise :class:`CheckFailed` unless every case passed: the last line of an exercise's test cell.

        In a notebook the failure shows as one line under the report the check
        printed, not as a traceback, and an autograder still counts the cell as
        failed (it is an error).

        Examples
        --------
        >>> CheckResult("softmax", 2, 2).require()
        >>> CheckResult("softmax", 2, 1, ("case: wrong",)).require()
        Traceback (most recent call last):
        ...
        attnlib.checks.CheckFailed: softmax: 1 of 2 checks passed; the report above says which case to look at.
        """
        if not self.passed:
            raise CheckFailed(self)

    def report(self) -> str:
        """The text that the check prints."""
        if self.passed:
            lines = [f"PASS {self.name}: all {self.n_cases} checks passed."]
        else:
            lines = [f"FAIL {self.name}: {self.n_passed} of {self.n_cases} checks passed."]
            lines += [f"  - {m}" for m in self.messages]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class CheckFailed(AssertionError):
    """A self-check that did not pass, raised by ``CheckResult.require()``.

    An ``AssertionError``, so graders treat it like a failed ``assert``. In
    IPython and Jupyter it is shown as one line instead of a traceback: the
    check's report, printed just above it, already says what went wrong.
    """

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        by_hand = isinstance(result, ByHandResult)
        unit, what = ("entries right", "entry") if by_hand else ("checks passed", "case")
        super().__init__(f"{result.name}: {result.n_passed} of {result.n_cases} {unit}; the report above says which {what} to look at.")

    __module__ = "attnlib.checks"  # its public home, as in the messages students see

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback (one line)."""
        return [f"Not passed yet. {self}"]


@dataclass(frozen=True)
class ByHandResult(CheckResult):
    """The outcome of ``check_by_hand``: one case per typed number, each right or not yet.

    ``entries`` holds one line per number, in the order of the answer cell.
    The report lists them only while some are not yet right, so a right
    answer's output (which the web book shows) holds no number.
    """

    entries: tuple[str, ...] = field(default_factory=tuple)

    def report(self) -> str:
        """Right or not yet, per entry; never the expected numbers."""
        if self.passed:  # no numbers: the book's pages show this output next to the folded solution
            return "\n".join([f"RIGHT {self.name}: all {self.n_cases} entries are right.", *(f"  note: {n}" for n in self.notes)])
        head = f"NOT YET {self.name}: {self.n_passed} of {self.n_cases} entries right."
        return "\n".join([head, *(f"  {e}" for e in self.entries), *(f"  note: {n}" for n in self.notes)])
