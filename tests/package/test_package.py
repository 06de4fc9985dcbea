"""attnlib as a package: ``python -m build``, the wheel in a fresh environment, and the Colab install cell.

One session fixture does everything that installs packages (from pip's cache,
else from PyPI), once and in this order, in about two minutes:

1. ``python -m build --outdir DIST`` from the repository, as the README shows it:
   an sdist and a wheel, and its output is kept to check that it has no warning;
2. a new virtual environment (no attnlib, nothing of this repository's
   ``.venv``) gets ``pip install DIST/attnlib-*.whl ipykernel`` (ipykernel only to
   start a kernel there in step 4; attnlib's own needs come from the wheel's
   metadata), then ``pip check``;
3. that environment's Python, started outside the repository, imports attnlib and
   the explorers from its ``site-packages``, builds ``attention_explorer()``, writes
   its front-end module (``_esm``) to a file and ``node`` imports it (the module
   anywidget gives the browser resolves, with no relative import left), and times
   one ``attnlib.measure`` run on one BLAS thread (threadpoolctl);
4. ``pip uninstall attnlib`` leaves the environment as Colab is before a chapter's
   first cell, and a kernel of that environment runs the first cell of chapter 3
   with the repository's address replaced by this clone (``git+file://``, so pip
   clones and builds the committed state, as it clones GitHub in Colab), then
   shows the explorer, then runs the first cell again (now it must do nothing).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from support.paths import CHAPTERS, ROOT

from tools.colab_cell import CELL_ID, install_spec

pytestmark = pytest.mark.slow

#: what the wheel must hold besides the Python modules: the explorers' front end
FRONT_END = ("attention.js", "compute.js", "dom.js", "format.js", "link.js", "host.js", "explorer.css")

PROBE = r"""
import json, subprocess, sys, time
from importlib import metadata
from pathlib import Path

import attnlib
from attnlib.explorers import attention_explorer
from attnlib.explorers import frontend
from attnlib.measure import measure_attention

ex = attention_explorer()
data, meta = ex._repr_mimebundle_()
module = Path(sys.argv[1])
module.write_text(ex._esm, encoding="utf-8")
node = subprocess.run(
    [sys.argv[2], "--input-type=module", "-e",
     f"const m = await import({json.dumps(module.as_uri())}); console.log(typeof m.default.render)"],
    capture_output=True, text=True,
)
start = time.perf_counter()
rows = measure_attention([32], d_k=4, block_size=8, repeats=1, blas_threads=1)
print(json.dumps({
    "version": attnlib.__version__,
    "metadata_version": metadata.version("attnlib"),
    "requires": metadata.requires("attnlib"),
    "attnlib": attnlib.__file__,
    "static": str(frontend.STATIC),
    "static_files": sorted(p.name for p in frontend.STATIC.iterdir()),
    "css": len(ex._css),
    "esm_imports": [line for line in ex._esm.splitlines() if line.lstrip().startswith("import ")],
    "mimes": sorted(data),
    "snapshot": "<table" in data["text/html"],
    "weights": ex.result.weights.round(4)[0].tolist(),
    "node": [node.returncode, node.stdout.strip(), node.stderr[-2000:]],
    "measured": [rows[0].n, rows[0].max_difference < 1e-9],
}))
"""

SHOW = (
    "import sys\n"
    "import attnlib\n"
    "from attnlib.explorers import attention_explorer\n"
    "print(attnlib.__file__)\n"
    "print(sys.prefix)\n"
    "attention_explorer()"
)


def _clean_env(env_dir: Path | None = None) -> dict[str, str]:
    """This process's environment without the test venv's traces (and with byte-compiling allowed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHOME")}
    if env_dir is not None:
        env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(cmd: list, what: str, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _first_cell(notebook: Path) -> str:
    cell = json.loads(notebook.read_text())["cells"][0]
    assert cell["id"] == CELL_ID
    return "".join(cell["source"])


def _run_in_kernel(python: Path, sources: list[str], cwd: Path, home: Path, env: dict) -> list[list[dict]]:
    """Run ``sources`` as the cells of one notebook in a kernel started by ``python``; return each cell's outputs."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    spec_dir = home / "kernels" / "fresh"
    spec_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec_dir / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "fresh", "language": "python"}))
    km = KernelManager(kernel_name="fresh", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(home / "kernels")]))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(nb, km=km, timeout=600, kernel_name="fresh", resources={"metadata": {"path": str(cwd)}})
    # the kernel gets the fresh environment's PATH and nothing of the test environment (env= reaches start_kernel)
    client.execute(env=env)
    return [cell.outputs for cell in nb.cells]


@pytest.fixture(scope="session")
def package(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("package")
    timings: dict[str, float] = {}

    # 1. python -m build, as the README shows it
    start = time.perf_counter()
    dist = base / "dist"
    build = _run([sys.executable, "-m", "build", "--outdir", dist, ROOT], "python -m build", cwd=ROOT, env=_clean_env())
    timings["build"] = time.perf_counter() - start
    wheels, sdists = sorted(dist.glob("attnlib-*.whl")), sorted(dist.glob("attnlib-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())

    # 2. a fresh environment with the wheel
    start = time.perf_counter()
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = _clean_env(env_dir)
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    # --no-compile: byte-compiling sympy and matplotlib would double the time, and nothing here needs it
    _run([*pip, "install", "--quiet", "--no-compile", wheels[0], "ipykernel"], "pip install the wheel", cwd=base, env=env)
    check = _run([*pip, "check"], "pip check", cwd=base, env=env)
    timings["venv with the wheel"] = time.perf_counter() - start

    # 3. import it outside the repository, load its front-end module in node, measure on one BLAS thread
    node = shutil.which("node")
    assert node, "node is missing (apt-get install nodejs): it loads the explorers' front-end module"
    (base / "probe.py").write_text(PROBE)
    probe = _run([python, base / "probe.py", base / "attention.mjs", node], "importing the installed wheel", cwd=base, env=env)
    facts = json.loads(probe.stdout.strip().splitlines()[-1])

    # 4. without attnlib, a kernel of the environment runs chapter 3's first cell (from this clone)
    start = time.perf_counter()
    _run([*pip, "uninstall", "--yes", "--quiet", "attnlib"], "pip uninstall attnlib", cwd=base, env=env)
    gone = subprocess.run([python, "-c", "import attnlib"], capture_output=True, text=True, cwd=base, env=env)
    cell = _first_cell(CHAPTERS / "03-queries-keys-values.ipynb")
    local = cell.replace(install_spec(), f"git+file://{ROOT}")
    assert local.count(f"git+file://{ROOT}") == 1, f"the install cell does not name {install_spec()!r}:\n{cell}"
    outputs = _run_in_kernel(python, [local, SHOW, local], cwd=base, home=base / "jupyter", env=env)
    timings["install cell in a kernel"] = time.perf_counter() - start
    return {
        "build_log": build.stdout + build.stderr,
        "wheel": wheels[0],
        "sdist": sdists[0],
        "env_dir": env_dir,
        "pip_check": check.stdout,
        "facts": facts,
        "importable_after_uninstall": gone.returncode == 0,
        "cell_outputs": outputs,
        "timings": timings,
    }


def test_build_gives_a_wheel_and_an_sdist_without_warnings(package):
    log = package["build_log"]
    assert "Successfully built" in log and package["wheel"].name in log, log[-2000:]
    warnings = [line for line in log.splitlines() if re.search(r"warn", line, re.IGNORECASE)]
    assert warnings == [], "python -m build warned:\n" + "\n".join(warnings)
    print(package["timings"])


def test_wheel_holds_the_package_and_the_explorers_front_end(package):
    version = _pyproject()["project"]["version"]
    assert package["wheel"].name == f"attnlib-{version}-py3-none-any.whl"
    with zipfile.ZipFile(package["wheel"]) as whl:
        names = set(whl.namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "attnlib").rglob("*.py")}
    assert modules <= names, f"modules missing from the wheel: {sorted(modules - names)}"
    static = {p.relative_to(ROOT).as_posix() for p in (ROOT / "attnlib" / "explorers" / "static").iterdir() if p.suffix in (".js", ".css")}
    assert {f"attnlib/explorers/static/{name}" for name in FRONT_END} <= static <= names, sorted(static - names)
    # nothing else of the repository (tests, chapters, the book's configuration)
    assert {n.split("/")[0] for n in names} == {"attnlib", f"attnlib-{version}.dist-info"}, sorted(names)


def test_sdist_holds_the_package_and_the_changelog_but_not_the_tests(package):
    import tarfile

    with tarfile.open(package["sdist"]) as sdist:
        names = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"pyproject.toml", "README.md", "CHANGELOG.md", "attnlib/explorers/static/attention.js", "attnlib/core.py"} <= names
    assert not any(n.startswith("tests/") for n in names), sorted(n for n in names if n.startswith("tests/"))


def test_every_runtime_dependency_is_declared(package):
    requires = package["facts"]["requires"]
    declared = {re.split(r"[<>=!~;\s\[]", r, maxsplit=1)[0].lower() for r in requires}
    assert {"numpy", "matplotlib", "ipywidgets", "anywidget", "sympy", "threadpoolctl"} <= declared, requires
    assert "No broken requirements found." in package["pip_check"]
    # chapter 15 measures on one BLAS thread: that needs threadpoolctl, which came with the wheel alone
    assert package["facts"]["measured"] == [32, True]


def test_installed_wheel_imports_the_explorers_from_site_packages(package):
    facts = package["facts"]
    site = Path(package["env_dir"]).resolve()
    assert Path(facts["attnlib"]).resolve().is_relative_to(site), facts["attnlib"]
    assert Path(facts["static"]).resolve().is_relative_to(site), facts["static"]
    assert {"attention.js", "compute.js", "dom.js", "format.js", "link.js", "explorer.css"} <= set(facts["static_files"])
    assert facts["mimes"] == ["application/vnd.jupyter.widget-view+json", "text/html", "text/plain"]
    assert facts["snapshot"] and facts["css"] > 1000
    assert facts["weights"] == [0.4555, 0.2246, 0.3199]


def test_explorers_front_end_module_resolves_in_node(package):
    facts = package["facts"]
    assert facts["esm_imports"] == [], f"the module anywidget loads still imports: {facts['esm_imports']}"
    code, out, err = facts["node"]
    assert code == 0 and out == "function", f"node could not load the explorer's module: {out}\n{err}"


def test_version_is_written_once_and_read_from_the_metadata(package):
    version = _pyproject()["project"]["version"]
    facts = package["facts"]
    assert facts["version"] == facts["metadata_version"] == version
    init = (ROOT / "attnlib" / "__init__.py").read_text()
    assert version not in init, "attnlib/__init__.py repeats the version: read it from the metadata"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases and releases[0] == version, f"CHANGELOG.md's newest release {releases[:1]} is not {version}"
    assert "## [Unreleased]" in changelog and "Keep a Changelog" in changelog


def test_install_cell_installs_attnlib_where_it_is_missing_and_then_does_nothing(package):
    assert not package["importable_after_uninstall"], "attnlib was still importable before the cell ran"
    install, show, again = package["cell_outputs"]
    printed = "".join(o.get("text", "") for o in show if o["output_type"] == "stream").split()
    assert printed[:2] and Path(printed[0]).resolve().is_relative_to(Path(package["env_dir"]).resolve()), printed
    displays = [o for o in show if o["output_type"] == "execute_result"]
    assert len(displays) == 1
    data = displays[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in data and "<table" in data["text/html"]
    errors = [o for o in install + again if o["output_type"] == "error"]
    assert errors == []
    # the second run found attnlib and called nothing: no pip, no output
    assert again == [], again


def test_install_cell_runs_in_this_environment_without_output():
    """In the book's own environment (and on Binder, in JupyterLite, in the build) the cell is a no-op."""
    cell = _first_cell(CHAPTERS / "01-running-example.ipynb")
    code = textwrap.dedent(
        f"""
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        calls = []
        shell.register_magic_function(lambda line: calls.append(line), "line", "pip")
        result = shell.run_cell({cell!r})
        assert result.success, result
        print(calls)
        """
    )
    out = _run([sys.executable, "-c", code], "the install cell in this environment", cwd=CHAPTERS)
    assert out.stdout.strip() == "[]", out.stdout
