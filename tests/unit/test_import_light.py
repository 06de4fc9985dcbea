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


HOMEWORK_PROBE = """
import sys
import attnlib
print(sorted(m for m in sys.modules if m.startswith(("attnlib.checks", "attnlib.exercises", "attnlib.variants"))))
"""


def test_import_attnlib_loads_no_homework_module():
    """Issue 49: ``import attnlib`` loaded 46 modules, all 17 exercise modules and grading.py among them."""
    out = subprocess.run([sys.executable, "-c", HOMEWORK_PROBE], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]"], out


FIRST_PROBES = {
    "checks": "import attnlib.checks as m; print(m.check_softmax.__name__, m.check_by_hand.__name__)",
    "exercises": "import attnlib.exercises as m; print(m.EXERCISES['9.2'].function, 'check_causal_mask' in m.CHECKS)",
    "variants": "import attnlib.variants as m; print(m.masked_row_by_hand().exercise, m.student_seed('s', 'ch09', key='k') >= 0)",
    "attribute": "import attnlib; print(attnlib.checks.check_softmax.__name__, attnlib.variants.variant('9.1').exercise)",
}
FIRST_EXPECTED = {
    "checks": ["check_softmax", "check_by_hand"],
    "exercises": ["my_causal_mask", "True"],
    "variants": ["9.1", "True"],
    "attribute": ["check_softmax", "9.1"],
}


def test_each_homework_package_may_be_imported_first_in_a_fresh_interpreter():
    for name, code in FIRST_PROBES.items():
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, f"importing {name} first failed:\n{done.stderr[-2000:]}"
        assert done.stdout.split() == FIRST_EXPECTED[name], (name, done.stdout)
