"""``import attnlib`` stays light: matplotlib and anywidget are imported only by the submodules that draw."""

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
