"""The expensive things the tests share, each made once per run (``support.once``), and the run's order.

One chain makes everything that needs the chapters executed:

1. ``binder_env``: a fresh virtual environment from ``requirements.txt`` alone, as Binder
   builds it, with a kernel started in ``chapters/`` to show which ``attnlib`` it imports;
2. ``binder_book``: in that environment, the Jupyter Book convention
   (``jupyter-book build . -W -n --keep-going``) with an empty execution cache, so that
   every notebook of the book is executed top to bottom by that environment's kernel:
   the only execution of the chapters in a test run;
3. ``built_book``: the strict build with the test environment's tools (the JupyterLite
   site included), started from a copy of that execution cache. Jupyter Book's cache is
   keyed on the notebooks' code cells, exactly as ``python3 dev.py book`` reuses
   ``_build/.jupyter_cache``: a notebook whose code is the same is not run again, and the
   test that checks the build also checks that nothing was executed a second time;
4. ``executed(path)``: a notebook as that execution left it (outputs and seconds), read
   from the cache, for the tests of the chapters' outputs, figures and prose numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.notebooks import book_notebooks
from support.once import once
from support.paths import BIN, CHAPTERS, ROOT

# Kernels started by the tests inherit this environment; a forced backend such as
# MPLBACKEND=Agg would stop notebooks from displaying their figures inline.
os.environ.pop("MPLBACKEND", None)

# Kernels, nbgrader and jupyter-book are found in the test environment first.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"

# The order of the run. The module that starts the chain of expensive fixtures (see the module
# docstring) runs first, then the long modules that need no build, so that under pytest-xdist one worker builds while the other runs the
# fast tests; the modules that need the built book run last, the longest first, so that both
# workers share them once the build is there. Everything else keeps pytest's order in between.
FIRST = (
    "book/test_book_build.py",  # asks for built_book, which makes the whole chain
    "grading/test_nbgrader.py",  # the long ones that need no build, so that short ones fill the gaps
    "book/test_repository_url.py",  # short: xdist queues a second module behind the chain's worker
    "grading/test_per_student.py",
    "web/test_browser_explorer.py",
)
LAST = (
    "web/test_web_pages.py",  # every page in chromium, light and dark, with axe-core
    "book/test_pdf.py",  # the single-page build, printed, and a web build that links it
    "web/test_web_explorers.py",
    "web/test_web_reading.py",
    "web/test_lite_browser.py",
    "web/test_cheatsheet_print.py",
    "book/test_lite.py",
    "book/test_binder_env.py",
    "book/test_chapters.py",
    "book/test_prose_numbers.py",
    "book/test_widgets_pages.py",
)


def pytest_collection_modifyitems(config, items):
    tests = ROOT / "tests"

    def rank(item) -> int:
        path = Path(str(item.fspath))
        name = path.relative_to(tests).as_posix() if path.is_relative_to(tests) else ""
        if name in FIRST:
            return FIRST.index(name) - len(FIRST)
        return LAST.index(name) + 1 if name in LAST else 0

    items.sort(key=rank)  # sort is stable: the order inside each rank is pytest's


def _env_without_venv(bindir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    return env


PROBE = r'''
import json, sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

chapters, out = Path(sys.argv[1]), Path(sys.argv[2])
probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "import json, os, sys\nimport attnlib\n"
    "print(json.dumps({'prefix': sys.prefix, 'attnlib': attnlib.__file__, 'cwd': os.getcwd()}))"
)])
NotebookClient(probe, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(chapters)}}).execute()
out.write_text(probe.cells[0].outputs[0]["text"])
'''


def _make_binder_env(folder: Path) -> dict:
    env_dir = folder / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = _env_without_venv(env_dir / "bin")
    install = subprocess.run(
        # --no-compile: Python writes each module's bytecode when it is first imported instead of pip
        # compiling every installed file up front (what the kernel runs is the same)
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile", "-r", "requirements.txt"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert install.returncode == 0, f"pip install -r requirements.txt failed:\n{install.stdout[-3000:]}\n{install.stderr[-3000:]}"
    script, probe_out = folder / "probe.py", folder / "probe.json"
    script.write_text(PROBE)
    run = subprocess.run([python, script, CHAPTERS, probe_out], cwd=CHAPTERS, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"starting a kernel in the Binder environment failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return {"env_dir": str(env_dir), "probe": probe_out.read_text()}


@pytest.fixture(scope="session")
def binder_env(tmp_path_factory) -> dict:
    """A fresh virtual environment from requirements.txt alone (pip's cache is reused) and what its kernel imported."""
    return once(tmp_path_factory, "binder-env", _make_binder_env)


@pytest.fixture(scope="session")
def binder_book(binder_env, tmp_path_factory) -> dict:
    """The conventional strict build in the Binder environment, which executes every notebook of the book."""

    def make(folder: Path) -> dict:
        env_bin = Path(binder_env["env_dir"]) / "bin"
        build = subprocess.run(
            [env_bin / "jupyter-book", "build", ROOT, "--path-output", folder, "-W", "-n", "--keep-going"],
            cwd=ROOT, env=_env_without_venv(env_bin), capture_output=True, text=True,
        )  # fmt: skip
        log = build.stdout + build.stderr
        (folder / "build.log").write_text(log)
        assert build.returncode == 0, f"jupyter-book build in the fresh environment failed:\n{log[-6000:]}"
        return {"html": str(folder / "_build" / "html"), "cache": str(folder / "_build" / ".jupyter_cache"), "log": log}

    return once(tmp_path_factory, "binder-book", make)


@dataclass
class BuiltBook:
    html: Path
    log: str
    seconds: float


@pytest.fixture(scope="session")
def built_book(binder_book, tmp_path_factory) -> BuiltBook:
    """The strict build with the test environment's tools (JupyterLite site included), from the run's execution cache."""

    def make(folder: Path) -> dict:
        shutil.copytree(binder_book["cache"], folder / "_build" / ".jupyter_cache")
        jb = shutil.which("jupyter-book", path=str(BIN))
        assert jb, "jupyter-book is not installed in the test environment"
        start = time.perf_counter()
        proc = subprocess.run(
            [jb, "build", str(ROOT), "--path-output", str(folder), "-W", "-n", "--keep-going"],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        log = proc.stdout + proc.stderr
        (folder / "build.log").write_text(log)
        assert proc.returncode == 0, f"strict book build failed ({proc.returncode}):\n{log[-6000:]}"
        return {"html": str(folder / "_build" / "html"), "log": log, "build_seconds": round(time.perf_counter() - start, 1)}

    made = once(tmp_path_factory, "built-book", make)
    return BuiltBook(Path(made["html"]), made["log"], made["build_seconds"])


@pytest.fixture(scope="session")
def executed(binder_book):
    """``executed(path)``: a notebook of the book as the run's one execution left it, ``(notebook, seconds)``.

    The notebook comes from the execution cache of ``binder_book``, matched on its code as the
    book build matches it; ``seconds`` is how long its fresh kernel took to run it top to bottom.
    """
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(binder_book["cache"])
    known = {p.resolve() for p in book_notebooks()}

    def read(path: Path):
        assert path.resolve() in known, f"{path} is not executed by the book build"
        nb = nbformat.read(path, as_version=4)
        record = cache.match_cache_notebook(nb)
        _, merged = cache.merge_match_into_notebook(nb)
        return merged, float(record.data["execution_seconds"])

    return read


@pytest.fixture(scope="session")
def web_html(request) -> Path:
    """The built site: the strict build of this run, or WEB_BOOK_HTML (an existing build, to iterate on the web tests)."""
    existing = os.environ.get("WEB_BOOK_HTML")
    return Path(existing) if existing else request.getfixturevalue("built_book").html
