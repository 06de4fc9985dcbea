"""attnlib.checks and attnlib.exercises import in either order (issue 49: a load-order loop).

The chapters' exercise modules import the checks' runner, and attnlib.checks re-exports the
chapters' checks. When attnlib.checks read them at import time, the two packages imported each
other, and the package worked only because ``attnlib/__init__.py`` named ``checks`` before
``exercises``: a copy of the package whose ``__init__`` imported ``exercises`` first failed with
"ImportError: cannot import name 'CHECKS'". The test builds exactly that copy and imports it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from support.paths import ROOT

PROBE = (
    "import attnlib; from attnlib.checks import check_softmax; import attnlib.checks as c; "
    "print(check_softmax.__name__, 'check_causal_mask' in dir(c))"
)


def _import_copy(tmp_path, init_text: str) -> subprocess.CompletedProcess:
    copy = tmp_path / "attnlib"
    shutil.copytree(ROOT / "attnlib", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "__init__.py").write_text(init_text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_exercises_may_be_imported_before_checks(tmp_path):
    init = (ROOT / "attnlib" / "__init__.py").read_text()
    anchor = "from . import (\n"
    assert anchor in init, "attnlib/__init__.py no longer imports its submodules in one 'from . import (' list"
    reordered = init.replace(anchor, anchor + "    exercises,  # first, before checks\n", 1)
    done = _import_copy(tmp_path, reordered)
    assert done.returncode == 0, f"importing exercises before checks failed:\n{done.stderr[-2000:]}"
    assert done.stdout.split() == ["check_softmax", "True"]


def test_the_copy_is_really_imported(tmp_path):
    """A guard: the probe reads the copy, not the installed package (a broken copy fails)."""
    done = _import_copy(tmp_path, "raise ImportError('the copy was imported')\n")
    assert done.returncode != 0 and "the copy was imported" in done.stderr
