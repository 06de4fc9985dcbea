"""What Binder and the Jupyter Book convention build: a fresh environment from requirements.txt alone.

repo2docker installs ``requirements.txt`` (with its ``-e .`` line, from the
repository root) on the Python of ``runtime.txt``; a reader or a fork's CI
following the Jupyter Book convention runs ``pip install -r requirements.txt``
and ``jupyter-book build .``. The fixtures of ``tests/conftest.py`` do both in
one new virtual environment per test run (uv installs ``requirements.txt``
there with the versions pip resolves, in seconds, from its cache or PyPI):
``binder_env`` starts a kernel in ``chapters/``;
``execution`` has that environment's Python run every notebook of the book in a
fresh kernel of that environment, into a new execution cache (the run's only
execution of the notebooks, which the other build and the chapter tests read
too); ``binder_book`` is that environment's ``jupyter-book build . -W -n
--keep-going`` from that cache. So what the pages show was computed by the
fresh environment's kernel, and built by its own tools. The tests here check:
the kernel's ``attnlib`` is this repository's, every notebook ran without error
in that environment, the build took each one from that execution (none was
run again, none is missing), zero warnings, one line saying the JupyterLite
site was skipped, the numbers of tests/support/expected_outputs.py on the pages,
no JupyterLite site, no launch button or link into one, and every internal
link resolving. Nothing from requirements-dev.txt or requirements-docs.txt is
installed there.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest
from support.expected_outputs import EXPECTED
from support.notebooks import book_notebooks, chapter_notebooks
from support.paths import CHAPTERS, ROOT
from support.site import broken_internal_links, site_pages

pytestmark = pytest.mark.slow

def test_runtime_txt_names_a_python_3_11_or_newer():
    runtime = (ROOT / "runtime.txt").read_text().strip()
    name, _, version = runtime.partition("-")
    assert name == "python" and tuple(int(x) for x in version.split(".")[:2]) >= (3, 11), runtime
    assert sys.version_info >= (3, 11)


def test_requirements_txt_leaves_out_test_and_docs_tools():
    lines = [line.split("==")[0].strip().lower() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    for tool in ("pytest", "ruff", "playwright", "jupyterlite-sphinx", "jupyterlite-core", "jupyterlite-pyodide-kernel"):
        assert tool not in lines, f"{tool} belongs in requirements-dev.txt or requirements-docs.txt"


def test_binder_kernel_imports_attnlib_from_this_repository(binder_env):
    probe = json.loads(binder_env["probe"])
    assert Path(probe["prefix"]) == Path(binder_env["env_dir"]), "the kernel did not run in the fresh environment"
    assert Path(probe["attnlib"]).resolve() == (ROOT / "attnlib" / "__init__.py").resolve()
    assert Path(probe["cwd"]).resolve() == CHAPTERS.resolve()


def test_conventional_build_has_no_warnings_and_skips_jupyterlite_in_one_line(binder_book):
    log = binder_book["log"]
    warnings = [line for line in log.splitlines() if re.search(r"\bWARNING\b", line) and "[IPKernelApp]" not in line]
    assert warnings == []
    assert "build succeeded" in log
    notes = [line for line in log.splitlines() if "jupyterlite_book:" in line]
    assert len(notes) == 1 and "not installed" in notes[0] and "without its JupyterLite site" in notes[0], notes


def test_conventional_build_runs_every_chapter_in_the_fresh_environment(binder_env, execution, binder_book):
    """Every notebook ran in the fresh environment's kernel, the build used those runs, and its pages show them."""
    assert Path(execution["python"]).parent == Path(binder_env["env_dir"]) / "bin", execution["python"]
    assert sorted(execution["succeeded"]) == sorted(str(p) for p in book_notebooks()), execution
    cached = set(re.findall(r"^(\S+\.ipynb): Using cached notebook", binder_book["log"], re.M))
    assert cached == {str(p) for p in book_notebooks()}, f"not from the environment's execution: {cached}"
    assert "Executing notebook" not in binder_book["log"]
    for nb in chapter_notebooks():
        page = Path(binder_book["html"]) / "chapters" / f"{nb.stem}.html"
        assert page.is_file(), f"{page} was not built"
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert 'class="cell_output' in text, f"{nb.stem} shows no output: it was not executed"
        # a LaTeX output ($...$ in the notebook) is a math element on the page: look for its TeX without the dollars
        missing = [s for s in EXPECTED.get(nb.stem, []) if s.replace("$", "") not in text]
        assert missing == [], f"{nb.stem} built in the Binder environment lacks {missing}"


def test_conventional_build_has_no_jupyterlite_and_no_dead_link(binder_book):
    site = Path(binder_book["html"])
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
