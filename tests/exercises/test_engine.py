"""The homework engine (issue 49): public names, no private name across modules, odd values for its building blocks.

The chapters' exercise modules (``attnlib/exercises/chNN.py``) build their self-checks with the engine in
``attnlib/exercises`` (``cases``, ``results``, ``sandbox``, ``by_hand``); ``attnlib.checks`` only re-exports it.
Before, the chapters imported 64 private names (``_Case``, ``_run``, ``_same``, ...) from ``attnlib/checks/runner.py``.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest
from support.paths import ROOT

from attnlib.exercises import cases, sandbox

PACKAGES = ("attnlib/exercises", "attnlib/checks")


def _imports(path):
    """(line, module, name) of every ``from X import name`` in a file (relative modules as written)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                yield node.lineno, module, alias.name


def test_no_underscore_name_crosses_a_module_boundary():
    """No ``from X import _name`` (a module such as ``.._validate`` may be private; the names taken from it may not)."""
    crossing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            for line, module, name in _imports(path):
                if name.startswith("_") and module != "__future__":
                    crossing.append(f"{path.relative_to(ROOT)}:{line}: from {module} import {name}")
    assert not crossing, "private names imported across modules:\n" + "\n".join(crossing)


def test_no_attribute_reaches_into_another_module_privately():
    """No ``module._name`` on an imported module either (``self._x`` and a class's own names are fine)."""
    crossing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            tree = ast.parse(path.read_text())
            imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
            imported |= {
                (alias.asname or alias.name).split(".")[0]
                for node in ast.walk(tree)
                if isinstance(node, ast.Import)
                for alias in node.names
            }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in imported - {"np", "numpy"}
                    and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                ):
                    crossing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not crossing, "private names reached through a module:\n" + "\n".join(crossing)


def test_the_chapters_import_the_engine_never_the_checks_face():
    found = []
    for path in sorted((ROOT / "attnlib/exercises").glob("ch*.py")):
        found += [f"{path.name}:{line}: {module}" for line, module, _ in _imports(path) if module.startswith("..checks")]
    assert not found, "a chapter's exercises import attnlib.checks (the face) instead of the engine:\n" + "\n".join(found)


def test_the_tolerances_are_defined_once():
    """ATOL, RTOL and TOLERANCE are assigned in results.py and nowhere else in the homework packages."""
    assigned = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name) and name.id in {"ATOL", "RTOL", "TOLERANCE", "DECIMALS"}:
                            assigned.append(f"{path.name}:{name.id}")
    assert sorted(assigned) == ["results.py:ATOL", "results.py:DECIMALS", "results.py:RTOL", "results.py:TOLERANCE"], assigned


# ---- odd values for the building blocks (the completeness guard's HOMEWORK_ENGINE entries) ----

ODD = [None, "x", 5, [1, "a"], {"a": 1}, np.zeros(0), np.array([np.nan, np.inf]), 1j, object(), 10**400]
CASE = cases.Case("n = 2", (2,), np.tril(np.ones((2, 2), dtype=bool)), kind="b")


@pytest.mark.parametrize("got", ODD, ids=lambda o: type(o).__name__)
def test_judge_value_and_same_values_never_raise_on_a_students_value(got):
    message = cases.judge_value(got, CASE)
    assert isinstance(message, str) and message.startswith("n = 2: ")
    assert cases.same_values(got, np.zeros(2)) is False


@pytest.mark.parametrize("odd", ["case", ("n", 2), None, 5], ids=lambda o: type(o).__name__)
def test_judge_value_names_a_case_that_is_not_one(odd):
    with pytest.raises(ValueError, match=r"^case must be a Case"):
        cases.judge_value(np.zeros(2), odd)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"name": 5}, "name"),
        ({"name": ""}, "name"),
        ({"cases": "abc"}, "cases"),
        ({"cases": [CASE, "x"]}, "cases"),
        ({"verbose": "yes"}, "verbose"),
        ({"notation": ("n",)}, "notation"),
    ],
)
def test_run_cases_names_the_odd_argument(kwargs, named):
    args = {"name": "mask", "fn": lambda n: np.tril(np.ones((n, n), dtype=bool)), "cases": [CASE], "verbose": False, **kwargs}
    with pytest.raises(ValueError, match=rf"^{named}"):
        cases.run_cases(**args)


@pytest.mark.parametrize("fn", ODD, ids=lambda o: type(o).__name__)
def test_run_cases_fails_a_function_that_is_not_one(fn):
    result = cases.run_cases("mask", fn, [CASE], verbose=False)
    assert not result.passed and "expected a function" in result.messages[0]


ODD_X = ["x", None, np.zeros(3), np.array([[np.nan]]), [[1, "a"]], np.zeros((1, 1, 1))]


@pytest.mark.parametrize("x", ODD_X, ids=lambda o: type(o).__name__)
def test_column_softmax_names_x(x):
    with pytest.raises(ValueError, match=r"^x"):
        cases.column_softmax(x)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((-1, "9.2", ("sizes",)), "seed"),
        ((True, "9.2", ("sizes",)), "seed"),
        ((3, "9.9", ("sizes",)), "exercise"),
        ((3, 9.2, ("sizes",)), "exercise"),
        ((3, "9.2", ("nope",)), "names"),
        ((3, "9.2", "sizes"), "names"),
    ],
)
def test_own_case_names_the_odd_argument(args, named):
    with pytest.raises(ValueError, match=rf"^{named}"):
        cases.own_case(*args)



def _no_doc(fn, verbose=True, seed=None):
    pass


def _raises_already(fn, verbose=True, seed=None):
    """Check.

    Raises
    ------
    ValueError
        Never.
    """


@pytest.mark.parametrize(
    ("odd", "said"),
    [(None, "check must be"), ("check_x", "check must be"), (len, "check must be"), (np.zeros(2), "check must be"),
     (_no_doc, "check must be"), (_raises_already, "check _raises_already already")],
)
def test_with_self_check_raises_names_check(odd, said):
    with pytest.raises(ValueError, match=f"^{said}"):
        cases.with_self_check_raises(odd)


def test_every_chapter_check_states_the_shared_raises_once_before_its_examples():
    """The section the 14 self-checks wrote out by hand is added by ``with_self_check_raises``: the docs still hold it."""
    import importlib
    import inspect

    shared = " ".join(cases.SELF_CHECK_RAISES.split())
    chapters = [importlib.import_module(f"attnlib.exercises.ch{k:02d}") for k in range(1, 18)]
    found = [f for m in chapters for name, f in vars(m).items() if name.startswith("check_") and inspect.isfunction(f)]
    with_it = [f for f in found if shared in " ".join((inspect.getdoc(f) or "").split())]
    assert len(with_it) == 14
    for f in with_it:
        doc = inspect.getdoc(f)
        assert doc.count("\nRaises\n------\n") == 1, f.__name__
        if "\nExamples\n" in doc:
            assert doc.index("\nRaises\n") < doc.index("\nExamples\n"), f.__name__

def test_check_rng_draws_the_same_cases_every_time():
    assert cases.check_rng().normal(size=3).tolist() == cases.check_rng().normal(size=3).tolist()


class _Raising(Exception):
    def __str__(self):
        raise RuntimeError("no")


@pytest.mark.parametrize("obj", [*ODD, _Raising(), "y" * 1000], ids=lambda o: type(o).__name__)
def test_the_sandbox_texts_never_raise(obj):
    assert isinstance(sandbox.safe_text(obj), str) and len(sandbox.safe_text(obj)) <= 300
    if isinstance(obj, BaseException):
        assert isinstance(sandbox.exception_text(obj), str)
        assert sandbox.where_student_code_failed(obj) == ""


def test_where_student_code_failed_names_the_students_line():
    def mine(x):
        return math.sqrt(x)

    call = sandbox.call_student(mine, (-1.0,))
    assert call.error is not None and "line" in call.error
