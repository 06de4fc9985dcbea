"""The expensive things the tests share, each made once per run (``support.once``), and the run's order.

One chain makes everything that needs the chapters executed:

1. ``binder_env``: a fresh virtual environment from ``requirements.txt`` alone, as Binder
   builds it, with a kernel started in ``chapters/`` to show which ``attnlib`` it imports;
2. ``execution``: that environment's Python runs every notebook of the book top to bottom,
   each in a fresh kernel of that environment (two at a time, one per core), into a new
   Jupyter Book execution cache: the only execution of the notebooks in a test run;
3. ``books``: two strict builds side by side from copies of that cache: the Jupyter Book
   convention with the Binder environment's own ``jupyter-book`` (``binder_book``) and the
   build with the test environment's tools, JupyterLite site included (``built_book``).
   The cache is keyed on the notebooks' code cells, exactly as ``python3 dev.py book``
   reuses ``_build/.jupyter_cache``: a notebook whose code is the same is not run again,
   and the tests of both builds check that neither executed a notebook a second time;
4. ``executed(path)``: a notebook as that execution left it (outputs, wall and CPU seconds), read
   from the cache, for the tests of the chapters' outputs, figures and prose numbers.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import subprocess
import time
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import settings
from support.notebooks import book_notebooks
from support.once import once, run_folder
from support.paths import ARTIFACTS, BIN, CHAPTERS, ROOT

# Kernels started by the tests inherit this environment; a forced backend such as
# MPLBACKEND=Agg would stop notebooks from displaying their figures inline.
os.environ.pop("MPLBACKEND", None)

# The machine is shared and the workers run side by side: hypothesis's wall-clock deadline per
# example (200 ms) fails at random under load, while the run's durations report shows slow tests.
settings.register_profile("shared-machine", deadline=None)
settings.load_profile("shared-machine")

# Kernels, nbgrader and jupyter-book are found in the test environment first.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"

# The order of the run. Under pytest-xdist the controller makes the chain of expensive fixtures
# (see the module docstring) in a thread of its own as soon as the workers have collected a test
# that needs the book (pytest_xdist_node_collection_finished below), so both workers start with
# the long modules that need no build (nbgrader, the package, JupyterLab), then the fast tests;
# the modules that need the built book run last, the longest first, so that both workers share
# them once the build is there. Everything else keeps pytest's order in between. While the chain
# runs, a free worker skips ahead to the next module that needs no build (the scheduler at the
# end of this file): no worker waits for the build while other work is left.
FIRST = (
    "grading/test_per_student.py",  # the long ones that need no build, one per worker, while the chain runs
    "grading/test_nbgrader.py",
    "package/test_package.py",
    "web/test_browser_explorer.py",
    "web/test_lab_induction.py",
    "web/test_lab_live_training.py",
    "grading/test_course_hub.py",  # mostly waiting on the hub's servers: beside the chain's CPU-bound build
    "book/test_nbconvert.py",
)
LAST = (
    "book/test_book_build.py",
    "web/test_web_pages.py",  # every page in chromium, light and dark, with axe-core
    "book/test_pdf.py",  # the single-page build, printed, and a web build that links it
    "web/test_web_explorers.py",
    "web/test_web_reading.py",
    "web/test_lite_browser.py",
    "web/test_web_explorers_fit.py",  # short, and it needs the build: after the long ones
    # here: the modules that need the build and are not listed (pytest_collection_modifyitems)
    "web/test_cheatsheet_print.py",
    "book/test_lite.py",
    "book/test_binder_env.py",
    "book/test_chapters.py",
    "book/test_prose_numbers.py",
    "book/test_widgets_pages.py",
    "book/test_page_meta.py",
    "book/test_colab.py",
)

#: the modules that need the build and are in neither list run after this one
AFTER_THE_LONG_ONES = "web/test_web_explorers_fit.py"


def pytest_collection_modifyitems(config, items):
    tests = ROOT / "tests"

    def rank(item) -> float:
        path = Path(str(item.fspath))
        name = path.relative_to(tests).as_posix() if path.is_relative_to(tests) else ""
        if name in FIRST:
            return FIRST.index(name) - len(FIRST)
        if name in LAST:
            return LAST.index(name) + 1
        # the other modules that need the build (each well under a minute): after the long ones
        return LAST.index(AFTER_THE_LONG_ONES) + 1.5 if name and needs_the_book(f"tests/{name}") else 0

    items.sort(key=rank)  # sort is stable: the order inside each rank is pytest's


def _env_without_venv(bindir: Path) -> dict:
    """The environment of a process of another virtual environment (the Binder one): its bin/ first on PATH,
    and bytecode written, so that each module it imports is compiled once (see _make_binder_env)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    return env


PROBE = r"""
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
"""


def _make_binder_env(folder: Path) -> dict:
    assert (BIN / "uv").exists(), f"{BIN / 'uv'} is missing: run the tests with `python3 dev.py test`, which installs uv into .venv"
    env_dir = folder / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = _env_without_venv(env_dir / "bin")
    install = subprocess.run(
        # requirements.txt alone, resolved by the test environment's uv (requirements-dev.txt): the same
        # versions as Binder's pip, in about 5 s of CPU against pip's 27 here. Like pip --no-compile, uv
        # writes no bytecode: the environment's processes write the bytecode of what they import
        # (_env_without_venv drops PYTHONDONTWRITEBYTECODE, which this machine sets), so the first kernel
        # compiles a module and the later ones reuse it, as in a Binder image whose modules were compiled
        [BIN / "uv", "pip", "install", "--quiet", "--python", python, "-r", "requirements.txt"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert install.returncode == 0, f"uv pip install -r requirements.txt failed:\n{install.stdout[-3000:]}\n{install.stderr[-3000:]}"
    script, probe_out = folder / "probe.py", folder / "probe.json"
    script.write_text(PROBE)
    run = subprocess.run([python, script, CHAPTERS, probe_out], cwd=CHAPTERS, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"starting a kernel in the Binder environment failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return {"env_dir": str(env_dir), "probe": probe_out.read_text()}


def make_binder_env(tmp_path_factory) -> dict:
    return once(tmp_path_factory, "binder-env", _make_binder_env)


@pytest.fixture(scope="session")
def binder_env(tmp_path_factory) -> dict:
    """A fresh virtual environment from requirements.txt alone (installed by uv) and what its kernel imported."""
    return make_binder_env(tmp_path_factory)


# Run by the Binder environment's Python: every notebook of the book into a new execution cache,
# with jupyter-cache's own worker (one fresh kernel per notebook, in the notebook's own folder,
# with the timeout of _config.yml; the per-notebook execution that myst-nb's cache mode runs), in a
# pool of one process per core. jupyter-cache's "local-parallel" executor hands the pool chunks of
# three notebooks in the book's order, so the long chapters at the end ran one after the other in
# one process; here the pool takes one notebook at a time, in the order given (the caller passes
# the chapters last to first, then the rest: the chapters beyond the post are the long ones).
# Each pool process runs one notebook at a time, so the growth of its children's CPU time over one
# job is what that notebook's kernel used, with the processes the kernel started and waited for
# (chapter 17 trains in two): a cost that, unlike the wall time, hardly depends on what else runs.
EXECUTE = r"""
import json, multiprocessing, resource, sys
from pathlib import Path
from jupyter_cache import get_cache
from jupyter_cache.executors.basic import ExecutionWorkerLocalMProc, ProcessData


def children_cpu():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def execute(job):
    before = children_cpu()
    code, uri = ExecutionWorkerLocalMProc()(job)
    return code, uri, round(children_cpu() - before, 2)


if __name__ == "__main__":
    cache_dir, timeout, out, notebooks = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    cache = get_cache(cache_dir)
    for nb in notebooks:
        cache.add_nb_to_project(nb)
    order = {str(Path(nb).resolve()): i for i, nb in enumerate(notebooks)}
    records = sorted(cache.list_unexecuted(), key=lambda r: order.get(r.uri, -1))
    jobs = [ProcessData(r.pk, r.uri, cache, timeout, False) for r in records]
    with multiprocessing.Pool(min(len(jobs), multiprocessing.cpu_count()) or 1) as pool:
        results = list(pool.imap_unordered(execute, jobs, chunksize=1))
    # 1: the notebook raised (its traceback is in the cache); 2: the worker failed around it (starting the
    # kernel, writing the cache; logged on stderr). Once in a loaded run a 2 came with no error in the
    # notebook: such a notebook runs once more, alone, and is reported as retried.
    failed_around = {uri for code, uri, _ in results if code == 2}
    again = [j for j in jobs if j.uri in failed_around]
    results = [r for r in results if r[0] != 2] + [execute(j) for j in again]
    tracebacks = {r.uri: r.traceback for r in cache.list_project_records() if r.traceback}
    with open(out, "w") as f:
        json.dump({"python": sys.executable, "succeeded": [p for i, p, _ in results if i == 0],
                   "failed": [p for i, p, _ in results if i != 0], "retried": [j.uri for j in again],
                   "cpu_seconds": {p: cpu for i, p, cpu in results if i == 0}, "tracebacks": tracebacks}, f)
"""


def _book_timeout() -> int:
    return int(yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"])


def make_execution(tmp_path_factory) -> dict:
    binder_env = make_binder_env(tmp_path_factory)

    def make(folder: Path) -> dict:
        python = Path(binder_env["env_dir"]) / "bin" / "python"
        script, report, cache = folder / "execute.py", folder / "execution.json", folder / ".jupyter_cache"
        script.write_text(EXECUTE)
        numbered = [p for p in book_notebooks() if p.name[:2].isdigit()]
        rest = [p for p in book_notebooks() if p not in numbered]
        notebooks = [str(p) for p in [*sorted(numbered, reverse=True), *rest]]  # the long ones first (EXECUTE)
        run = subprocess.run(
            [python, script, cache, str(_book_timeout()), report, *notebooks],
            cwd=ROOT, env=_env_without_venv(python.parent), capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 0, f"executing the notebooks in the Binder environment failed:\n{run.stderr[-4000:]}"
        done = json.loads(report.read_text())
        assert not done["failed"], "notebooks that failed in the Binder environment:\n" + "\n".join(
            f"{uri}:\n{done['tracebacks'].get(uri, '')[-3000:]}" for uri in done["failed"]
        ) + f"\nthe executor's log:\n{run.stderr[-4000:]}"
        ARTIFACTS.mkdir(exist_ok=True)  # each notebook's CPU seconds, kept with the run's timeline
        (ARTIFACTS / "execution-cpu.json").write_text(json.dumps(dict(sorted(
            ((Path(uri).name, cpu) for uri, cpu in done["cpu_seconds"].items()), key=lambda kv: -kv[1])), indent=1))
        if done["retried"]:  # on the run's terminal, not hidden: what went wrong the first time
            print(f"\nexecution: run again after a failure outside the notebook: {done['retried']}\n{run.stderr[-3000:]}")
        return {"cache": str(cache), **done}

    return once(tmp_path_factory, "execution", make)


@pytest.fixture(scope="session")
def execution(binder_env, tmp_path_factory) -> dict:
    """Every notebook of the book executed once by the Binder environment's kernel, into an execution cache."""
    return make_execution(tmp_path_factory)


def _build(jupyter_book: Path, folder: Path, cache: str, env: dict) -> subprocess.Popen:
    """Start ``jupyter-book build . -W -n --keep-going`` into ``folder``, from a copy of the execution cache."""
    shutil.copytree(cache, folder / "_build" / ".jupyter_cache")
    log = open(folder / "build.log", "w")  # noqa: SIM115 - closed when the build has ended
    command = [str(jupyter_book), "build", str(ROOT), "--path-output", str(folder), "-W", "-n", "--keep-going"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def make_books(tmp_path_factory) -> dict:
    binder_env, execution = make_binder_env(tmp_path_factory), make_execution(tmp_path_factory)

    def make(folder: Path) -> dict:
        env_bin = Path(binder_env["env_dir"]) / "bin"
        jb = shutil.which("jupyter-book", path=str(BIN))
        assert jb, "jupyter-book is not installed in the test environment"
        start = time.perf_counter()
        builds = {
            "binder": _build(env_bin / "jupyter-book", folder / "binder", execution["cache"], _env_without_venv(env_bin)),
            "strict": _build(Path(jb), folder / "strict", execution["cache"], dict(os.environ)),
        }
        made = {}
        for name, proc in builds.items():
            proc.wait()
            log = (folder / name / "build.log").read_text()
            assert proc.returncode == 0, f"the {name} build failed ({proc.returncode}):\n{log[-6000:]}"
            made[name] = {"html": str(folder / name / "_build" / "html"), "log": log}
        return {**made, "build_seconds": round(time.perf_counter() - start, 1)}

    return once(tmp_path_factory, "books", make)


@pytest.fixture(scope="session")
def books(binder_env, execution, tmp_path_factory) -> dict:
    """The run's two strict builds, side by side from the one execution (a process each, one per core).

    ``binder``: the Jupyter Book convention with the Binder environment's own jupyter-book (no
    JupyterLite tools there); ``strict``: the test environment's build, JupyterLite site included.
    """
    return make_books(tmp_path_factory)


@pytest.fixture(scope="session")
def binder_book(books) -> dict:
    """The conventional strict build in the Binder environment (its ``html`` and ``log``)."""
    return books["binder"]


@dataclass
class BuiltBook:
    html: Path
    log: str
    seconds: float


@pytest.fixture(scope="session")
def built_book(books) -> BuiltBook:
    """The strict build with the test environment's tools (JupyterLite site included), from the run's execution."""
    return BuiltBook(Path(books["strict"]["html"]), books["strict"]["log"], books["build_seconds"])


@dataclass(frozen=True)
class Ran:
    """How long a notebook's fresh kernel took to run it top to bottom: wall seconds, and the CPU
    seconds of the kernel and of the processes it started (see EXECUTE)."""

    wall: float
    cpu: float


@pytest.fixture(scope="session")
def executed(execution):
    """``executed(path)``: a notebook of the book as the run's one execution left it, ``(notebook, Ran)``.

    The notebook comes from the run's execution cache, matched on its code as the book build
    matches it; :class:`Ran` says how long its fresh kernel took to run it.
    """
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(execution["cache"])
    known = {p.resolve() for p in book_notebooks()}

    def read(path: Path):
        assert path.resolve() in known, f"{path} is not executed by the book build"
        nb = nbformat.read(path, as_version=4)
        record = cache.match_cache_notebook(nb)
        _, merged = cache.merge_match_into_notebook(nb)
        return merged, Ran(float(record.data["execution_seconds"]), execution["cpu_seconds"][record.uri])

    return read


@pytest.fixture(scope="session")
def web_html(request) -> Path:
    """The built site: the strict build of this run, or WEB_BOOK_HTML (an existing build, to iterate on the web tests)."""
    existing = os.environ.get("WEB_BOOK_HTML")
    return Path(existing) if existing else request.getfixturevalue("built_book").html


# --- the run's timeline ---------------------------------------------------------------------------
# Each worker writes when each module's tests started and ended (setup and teardown included);
# the controller prints one line per module, by start time, and keeps the lot in
# test-artifacts/timeline.json: the chain of fixtures and what waits for it, read at a glance.
_RUN_START = float(os.environ.setdefault("ATTN_RUN_START", repr(time.time())))


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for (kernels, builds, browsers, nbgrader)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, cpu = time.time(), _cpu()
    yield
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    line = json.dumps({"module": item.nodeid.split("::")[0], "worker": worker, "start": start, "end": time.time(),
                       "cpu": round(_cpu() - cpu, 2)})
    ARTIFACTS.mkdir(exist_ok=True)
    with open(ARTIFACTS / f"timeline-{worker}.jsonl", "a") as f:
        f.write(line + "\n")


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller: a fresh timeline
        for old in ARTIFACTS.glob("timeline-*.jsonl"):
            old.unlink()


def pytest_terminal_summary(terminalreporter):
    spans: dict[tuple[str, str], list[float]] = {}
    for path in sorted(ARTIFACTS.glob("timeline-*.jsonl")):
        for line in path.read_text().splitlines():
            t = json.loads(line)
            span = spans.setdefault((t["module"], t["worker"]), [t["start"], t["end"], 0, 0.0])
            span[0], span[1], span[2] = min(span[0], t["start"]), max(span[1], t["end"]), span[2] + 1
            span[3] += t.get("cpu", 0.0)
    if _CHAIN:
        folder = run_folder(terminalreporter.config._tmp_path_factory)
        made = {
            n: json.loads((folder / f"{n}.json").read_text())
            for n in ("binder-env", "execution", "books")
            if (folder / f"{n}.json").exists()
        }
        steps = ", ".join(f"{n} {m['seconds']:.0f} s ({m.get('cpu', 0):.0f} s CPU)" for n, m in made.items())
        total = f"; {_CHAIN_CPU[0]:.0f} s of CPU in all" if _CHAIN_CPU else ""
        terminalreporter.write_line(f"the chain, made by the controller: {steps}{total}")
    if not spans:
        return
    rows = sorted(spans.items(), key=lambda kv: kv[1][0])
    (ARTIFACTS / "timeline.json").write_text(json.dumps(
        [{"module": m, "worker": w, "start": round(s - _RUN_START, 1), "end": round(e - _RUN_START, 1), "tests": n,
          "cpu": round(c, 1)} for (m, w), (s, e, n, c) in rows], indent=1))  # fmt: skip
    terminalreporter.write_sep("=", "timeline of the run (seconds from the start; modules over 5 s; CPU of the worker and its children)")
    for (module, worker), (start, end, n, cpu) in rows:
        if end - start >= 5:
            at, to = start - _RUN_START, end - _RUN_START
            terminalreporter.write_line(f"{worker:>4} {at:6.0f} -> {to:6.0f}  {to - at:5.0f} s  {cpu:5.0f} s CPU  {n:4d} tests  {module}")
    for worker in sorted({w for _, w in spans}):
        mine = [v for (_, w), v in spans.items() if w == worker]
        busy, last = sum(v[3] for v in mine), max(v[1] for v in mine) - _RUN_START
        terminalreporter.write_line(f"{worker}: last test ended at {last:.0f} s; {busy:.0f} s of CPU in its tests")


# --- the chain in the background --------------------------------------------------------------
#: The fixtures of the chain: a test module that asks for one (or has a fixture of its own that does) needs it.
CHAIN_FIXTURES = frozenset({"binder_env", "execution", "executed", "books", "binder_book", "built_book", "web_html"})


def needs_the_book(nodeid: str) -> bool:
    """Whether the tests of a test module (a node id or xdist's scope, which starts with its path) wait for the chain:
    a function of the module takes one of :data:`CHAIN_FIXTURES` or asks ``request.getfixturevalue`` for it."""
    return _module_needs_the_book(nodeid.split("::")[0])


@functools.cache
def _module_needs_the_book(module: str) -> bool:
    import ast

    path = ROOT / module
    if not path.match("tests/*/test_*.py"):
        return False
    asked = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            asked.update(a.arg for a in node.args.args)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "getfixturevalue" and node.args:
            asked.add(getattr(node.args[0], "value", None))
    return bool(asked & CHAIN_FIXTURES)


_CHAIN: list = []


_CHAIN_CPU: list[float] = []


def _chain_in_background(tmp_path_factory) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        make_books(tmp_path_factory)
    except BaseException:  # noqa: BLE001 - once() recorded it: the fixtures report it in the tests that need it
        pass
    finally:  # the chain's processes (uv, the executions' kernels, the builds): the controller's children meanwhile
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        _CHAIN_CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """In the controller: start the chain once a worker has collected a test that needs the built book."""
    if not _CHAIN and any(needs_the_book(i) for i in ids):
        import threading

        thread = threading.Thread(target=_chain_in_background, args=(node.config._tmp_path_factory,), daemon=True)
        _CHAIN.append(thread)
        thread.start()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's ``--dist loadscope`` (a module on one worker, in the order above), except that a worker never
    waits for the chain while a module that does not need it is left: until the chain is made, a free
    worker takes the first module of the queue that needs no build (in the queue's order). Without the
    chain's modules, or once it is made, the order is the queue's."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ChainAwareScheduling(LoadScopeScheduling):
        def _assign_work_unit(self, node) -> None:
            if _CHAIN and _CHAIN[0].is_alive():
                free = next((scope for scope in self.workqueue if not needs_the_book(scope)), None)
                if free is not None:
                    self.workqueue.move_to_end(free, last=False)
            super()._assign_work_unit(node)

    return ChainAwareScheduling(config, log)
