"""What Binder and the Jupyter Book convention build: a fresh environment from requirements.txt alone.

repo2docker installs ``requirements.txt`` (with its ``-e .`` line, from the
repository root) on the Python of ``runtime.txt``; a reader or a fork's CI
following the Jupyter Book convention runs ``pip install -r requirements.txt``
and ``jupyter-book build .``. This test does both in one new virtual
environment (one per test session; pip's cache is reused, so packages come
from the cache or PyPI): with that environment's Python and kernel it starts
a kernel in ``chapters/`` and checks that ``attnlib`` is imported from this
repository, then runs that environment's ``jupyter-book build . -W -n
--keep-going`` (into a temporary folder, with no execution cache, so every
chapter is executed top to bottom by the fresh environment's kernel) and
checks: zero warnings, one line saying the JupyterLite site was skipped, the
numbers of tests/expected_outputs.py in the executed notebooks, no
JupyterLite site, no launch button or link into one, and every internal link
resolving. Nothing from requirements-dev.txt or requirements-docs.txt is
installed there.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest
from conftest import CHAPTERS, ROOT, chapter_notebooks
from expected_outputs import EXPECTED
from web_support import broken_internal_links, site_pages

pytestmark = pytest.mark.slow

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


def _runtime_python() -> str:
    return (ROOT / "runtime.txt").read_text().strip()


@pytest.fixture(scope="session")
def binder_run(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("binder")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    install = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", "requirements.txt"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, f"pip install -r requirements.txt failed:\n{install.stdout[-3000:]}\n{install.stderr[-3000:]}"
    script = base / "probe.py"
    script.write_text(PROBE)
    probe_out = base / "probe.json"
    run = subprocess.run([python, script, CHAPTERS, probe_out], cwd=CHAPTERS, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"starting a kernel in the Binder environment failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    # the Jupyter Book convention, with this environment's jupyter-book and kernel
    book = base / "book"
    start = time.perf_counter()
    build = subprocess.run(
        [env_dir / "bin" / "jupyter-book", "build", ROOT, "--path-output", book, "-W", "-n", "--keep-going"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    log = build.stdout + build.stderr
    (base / "build.log").write_text(log)
    assert build.returncode == 0, f"jupyter-book build in the fresh environment failed:\n{log[-6000:]}"
    print(f"conventional build in the fresh environment: {time.perf_counter() - start:.0f} s")
    return {
        "probe": json.loads(probe_out.read_text()),
        "env_dir": str(env_dir),
        "log": log,
        "html": book / "_build" / "html",
    }


def test_runtime_txt_names_a_python_3_11_or_newer():
    name, _, version = _runtime_python().partition("-")
    assert name == "python" and tuple(int(x) for x in version.split(".")[:2]) >= (3, 11), _runtime_python()
    assert sys.version_info >= (3, 11)


def test_requirements_txt_leaves_out_test_and_docs_tools():
    lines = [line.split("==")[0].strip().lower() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    for tool in ("pytest", "ruff", "playwright", "jupyterlite-sphinx", "jupyterlite-core", "jupyterlite-pyodide-kernel"):
        assert tool not in lines, f"{tool} belongs in requirements-dev.txt or requirements-docs.txt"


def test_binder_kernel_imports_attnlib_from_this_repository(binder_run):
    probe = binder_run["probe"]
    assert Path(probe["prefix"]) == Path(binder_run["env_dir"]), "the kernel did not run in the fresh environment"
    assert Path(probe["attnlib"]).resolve() == (ROOT / "attnlib" / "__init__.py").resolve()
    assert Path(probe["cwd"]).resolve() == CHAPTERS.resolve()


def test_conventional_build_has_no_warnings_and_skips_jupyterlite_in_one_line(binder_run):
    log = binder_run["log"]
    warnings = [line for line in log.splitlines() if re.search(r"\bWARNING\b", line) and "[IPKernelApp]" not in line]
    assert warnings == []
    assert "build succeeded" in log
    notes = [line for line in log.splitlines() if "jupyterlite_book:" in line]
    assert len(notes) == 1 and "not installed" in notes[0] and "without its JupyterLite site" in notes[0], notes


def test_conventional_build_runs_every_chapter_in_the_fresh_environment(binder_run):
    """Every chapter page shows the outputs its code printed in the fresh environment's kernel."""
    for nb in chapter_notebooks():
        page = binder_run["html"] / "chapters" / f"{nb.stem}.html"
        assert page.is_file(), f"{page} was not built"
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert 'class="cell_output' in text, f"{nb.stem} shows no output: it was not executed"
        # a LaTeX output ($...$ in the notebook) is a math element on the page: look for its TeX without the dollars
        missing = [s for s in EXPECTED.get(nb.stem, []) if s.replace("$", "") not in text]
        assert missing == [], f"{nb.stem} built in the Binder environment lacks {missing}"


def test_conventional_build_has_no_jupyterlite_and_no_dead_link(binder_run):
    site = binder_run["html"]
    assert (site / "chapters" / "01-running-example.html").is_file()
    assert not (site / "lite").exists(), "a JupyterLite site was built without its tools"
    pages = [p.relative_to(site).as_posix() for p in site_pages(site)]
    into_lite = {p: [h for h in (site / p).read_text(encoding="utf-8").split('"') if h.startswith(("lite/", "../lite/"))] for p in pages}
    assert {p: links for p, links in into_lite.items() if links} == {}
    broken = {p: bad for p, bad in broken_internal_links(site, pages).items() if bad}
    assert broken == {}, broken
    live = (site / "playground-live.html").read_text(encoding="utf-8")
    assert "without its JupyterLite site" in live and 'href="chapters/playground.html"' in live
    assert "launch-jupyterlite-button" not in (site / "chapters" / "03-queries-keys-values.html").read_text(encoding="utf-8")
    assert "deriving-attention.pdf" not in (site / "intro.html").read_text(encoding="utf-8"), "a link to a PDF that was not made"
