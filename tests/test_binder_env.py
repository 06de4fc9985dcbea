"""What Binder builds: a fresh environment from requirements.txt alone runs every chapter.

repo2docker installs ``requirements.txt`` (with its ``-e .`` line, from the
repository root) on the Python of ``runtime.txt``. This test does the same in
a new virtual environment (one per test session; pip's cache is reused, so
packages come from the cache or PyPI), then, with that environment's Python
and kernel, starts a kernel in ``chapters/``, checks that ``attnlib`` is
imported from this repository, and executes every chapter notebook top to
bottom, checking the numbers listed in tests/expected_outputs.py. Nothing
from requirements-dev.txt or requirements-docs.txt is installed there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import nbformat
import pytest
from conftest import CHAPTERS, ROOT, chapter_notebooks
from expected_outputs import EXPECTED

pytestmark = pytest.mark.slow

RUNNER = r'''
import json, os, sys, time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

chapters, out = Path(sys.argv[1]), Path(sys.argv[2])
probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "import json, os, sys\nimport attnlib\n"
    "print(json.dumps({'prefix': sys.prefix, 'attnlib': attnlib.__file__, 'cwd': os.getcwd()}))"
)])
NotebookClient(probe, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(chapters)}}).execute()
report = {"probe": json.loads(probe.cells[0].outputs[0]["text"]), "runner_prefix": sys.prefix, "chapters": {}}
for path in sorted(chapters.glob("[0-9][0-9]-*.ipynb")):
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    error = None
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(chapters)}}).execute()
    except Exception as exc:  # reported to the test, which fails on it
        error = f"{type(exc).__name__}: {exc}"[-4000:]
    nbformat.write(nb, out / path.name)
    report["chapters"][path.stem] = {"seconds": round(time.perf_counter() - start, 1), "error": error}
(out / "report.json").write_text(json.dumps(report, indent=2))
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
    out = base / "executed"
    out.mkdir()
    script = base / "run_chapters.py"
    script.write_text(RUNNER)
    run = subprocess.run([python, script, CHAPTERS, out], cwd=CHAPTERS, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"running the chapters in the Binder environment failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    report = json.loads((out / "report.json").read_text())
    report["env_dir"] = str(env_dir)
    report["executed"] = out
    return report


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


def test_binder_environment_runs_every_chapter(binder_run):
    ran = binder_run["chapters"]
    assert sorted(ran) == sorted(p.stem for p in chapter_notebooks())
    failed = {name: r["error"] for name, r in ran.items() if r["error"]}
    assert failed == {}, failed
    for name in ran:
        nb = nbformat.read(binder_run["executed"] / f"{name}.ipynb", as_version=4)
        text = "\n".join(
            str(part)
            for cell in nb.cells
            for out in cell.get("outputs", [])
            for part in [out.get("text", ""), *(out.get("data", {}).get(m, "") for m in ("text/plain", "text/html", "text/latex"))]
        )
        missing = [s for s in EXPECTED.get(name, []) if s not in text]
        assert missing == [], f"{name} in the Binder environment lacks {missing}"
    print("Binder environment, seconds per chapter:", {k: v["seconds"] for k, v in ran.items()})
