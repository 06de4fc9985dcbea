"""``import attnlib`` stays light: matplotlib and anywidget are imported only by the submodules that draw,
sympy only when a function that computes with it is first called."""

from __future__ import annotations

import subprocess
import sys

from support.paths import ROOT

PROBE = """
import sys
import attnlib
import attnlib.exercises.grading  # what a grader's kernel and the nbgrader plugins import
light = sorted(m for m in ("matplotlib", "anywidget") if m in sys.modules)
from attnlib import plots
print(light, attnlib.plots is plots, "plots" in dir(attnlib), "matplotlib" in sys.modules)
"""


def test_import_attnlib_loads_neither_matplotlib_nor_anywidget_until_plots_is_used():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]", "True", "True", "True"], out


SYMPY_PROBE = """
import sys
import attnlib, attnlib.explorers
import attnlib.exercises.grading
print("sympy" in sys.modules)
print(attnlib.exact.exact_softmax([1, 0])[0])
print(attnlib.heads.symbolic_parameter_count().evaluate(512, 8))
print("sympy" in sys.modules)
"""


def test_import_attnlib_loads_sympy_only_when_a_symbolic_function_is_called():
    out = subprocess.run([sys.executable, "-c", SYMPY_PROBE], cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["False", "[E/(1 + E), 1/(1 + E)]", "1048576", "True"], out
