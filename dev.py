#!/usr/bin/env python3
"""The commands of this project, on any machine with Python 3.11+.

    python3 dev.py book   # set up .venv, print the PDF and build the web book into _build/html
    python3 dev.py pdf    # set up .venv and print the whole book into _build/pdf/deriving-attention.pdf
    python3 dev.py serve  # read the built book: serve _build/html on http://127.0.0.1:8000/ (--port N)
    python3 dev.py notebooks  # the reader's notebooks (solutions removed, folded) in reader/ (--dir DIR)
    python3 dev.py test           # set up .venv with the test tools and run every test (what CI runs)
    python3 dev.py test --quick   # the inner loop: ruff, unit tests, doctests, explorers, self-checks

All create the virtual environment ``.venv`` on first use and reinstall
only when a requirements file or ``pyproject.toml`` changed. The PDF is
printed by Debian's chromium (``/usr/bin/chromium``); without it ``book``
builds the web book without the PDF and says so. Extra
arguments after ``test`` go to pytest (for example ``-k softmax``); ``--quick``
runs only what a change to ``attnlib/`` or a notebook's code most likely
breaks, in about a minute, and says how to run the rest.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

from pdf.chromium import CHROMIUM

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("ATTN_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")

# requirements-docs.txt (the JupyterLite site's build tools) is included by requirements-dev.txt too
REQUIREMENTS = {"book": ["requirements.txt", "requirements-docs.txt"], "test": ["requirements-dev.txt"]}
BUILD = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]


def run(cmd: list[str | Path], **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **kw.pop("env", {}))
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, env=env, **kw)


# How the requirements are installed into .venv (part of the stamp: a change reinstalls). Byte-compiled
# up front: this machine sets PYTHONDONTWRITEBYTECODE, so without it every process (each kernel, each
# grading and build process) compiles again every module it imports: importing matplotlib.pyplot, numpy
# and attnlib took 7.3 s instead of 2.5 s, and chapter 1 ran in 9.6 s instead of 4.9 s.
INSTALL = "pip install --quiet --compile-bytecode"


def uv_requirement() -> str:
    """The pinned ``uv`` of requirements-dev.txt: it installs the requirements into .venv.

    uv resolves the same pins to the same versions as pip (the two environments' package lists
    were compared) in a few seconds where pip took 30-60 s on two cores: the install phase of
    every fresh clone and CI run, and the Binder-like environment of the tests.
    """
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines():
        if line.split("==")[0].strip() == "uv":
            return line.split("#")[0].strip()
    raise SystemExit("requirements-dev.txt pins no uv (a line uv==<version>)")


def ensure_env(kind: str) -> None:
    """Create .venv if needed and install the requirements of ``kind`` when they changed."""
    if sys.version_info < (3, 11):  # noqa: UP036 (dev.py may be started by an older Python)
        sys.exit(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}")
    if not PY.exists():
        print(f"Creating the virtual environment {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        run([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip", uv_requirement()])
        (VENV / ".compiled").touch()  # what uv installs below, it byte-compiles (INSTALL)
    files = REQUIREMENTS[kind]
    digest = hashlib.sha256(INSTALL.encode())
    for name in ["pyproject.toml", "requirements.txt", "requirements-instructor.txt", "requirements-docs.txt", *files]:
        digest.update((ROOT / name).read_bytes())
    stamp = VENV / f".installed-{kind}"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    uv = BIN / ("uv.exe" if os.name == "nt" else "uv")
    if not uv.exists():  # a .venv made before dev.py used uv
        run([PY, "-m", "pip", "install", "--quiet", uv_requirement()])
    args: list[str | Path] = [uv, *INSTALL.split(), "--python", PY]
    for name in files:
        args += ["-r", name]
    run(args)
    compiled = VENV / ".compiled"
    if not compiled.exists():  # a .venv installed before dev.py byte-compiled: uv compiles only when it installs
        run([PY, "-m", "compileall", "-q", "-j", "0", sysconfig_purelib()], stdout=subprocess.DEVNULL)
        compiled.touch()
    stamp.write_text(digest.hexdigest())


def sysconfig_purelib() -> str:
    """The site-packages folder of .venv."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([str(PY), "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def ensure_node_modules() -> None:
    """``npm ci`` when package-lock.json changed: MathJax for the pages, axe-core and pyodide for the browser tests."""
    lock = ROOT / "package-lock.json"
    stamp = ROOT / "node_modules" / ".installed-lock"
    if not lock.exists():
        return
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    npm = shutil.which("npm")
    if npm is None:
        print("npm is missing: the book loads MathJax from its CDN and the browser tests cannot run (apt-get install npm)")
        return
    run([npm, "ci", "--no-audit", "--no-fund"])
    stamp.write_text(digest)


def book(extra: list[str]) -> None:
    ensure_env("book")
    ensure_node_modules()
    if CHROMIUM.exists():
        # first the PDF (single-page build, same execution cache), so that the web book links it
        run([PY, ROOT / "pdf" / "make_pdf.py"])
    else:
        print(f"{CHROMIUM} is missing: the web book is built without its PDF (apt-get install chromium)", flush=True)
    run([BIN / "jupyter-book", *BUILD[1:], *extra])
    print(f"\nThe book is in {ROOT / '_build' / 'html'}; read it with: python3 dev.py serve")


def pdf(extra: list[str]) -> None:
    ensure_env("book")
    ensure_node_modules()
    run([PY, ROOT / "pdf" / "make_pdf.py", *extra])
    print("\nThe next `python3 dev.py book` links it from the web book (intro page and every download menu)")


#: the port `serve` listens on unless --port says otherwise
SERVE_PORT = 8000


class _BookHandler(http.server.SimpleHTTPRequestHandler):
    # the types the book's modules and the JupyterLite site need, whatever the machine's mimetypes say
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
    }


def serve(extra: list[str]) -> None:
    """Serve the built web book over HTTP on 127.0.0.1 and print its address.

    Opened as a file (``file://.../index.html``) the pages show only the explorers' static
    snapshots: browsers do not run ES modules from files. Served, the explorers run live,
    search works and the JupyterLite pages open. Only Python's standard library is used.
    """
    import argparse

    def port_number(text: str) -> int:
        try:
            port = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--port must be a whole number from 0 to 65535, not {text!r}") from None
        if not 0 <= port <= 65535:
            raise argparse.ArgumentTypeError(f"--port must be a whole number from 0 to 65535, not {text!r}")
        return port

    parser = argparse.ArgumentParser(prog="python3 dev.py serve", description=serve.__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=port_number, default=SERVE_PORT,
                        help=f"the port on 127.0.0.1 (default {SERVE_PORT}; 0 picks a free one)")
    parser.add_argument("--dir", type=Path, default=ROOT / "_build" / "html",
                        help="the built web book (default _build/html)")
    args = parser.parse_args(extra)
    site = args.dir.resolve()
    if not (site / "index.html").is_file():
        sys.exit(f"--dir {args.dir}: no built book there (no index.html); build it first with: python3 dev.py book")
    handler = functools.partial(_BookHandler, directory=str(site))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    except OSError as exc:
        sys.exit(f"--port {args.port}: cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); choose another with --port")
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"Serving {site} at {url}\nOpen {url} in a browser to read the book (Ctrl+C stops the server)", flush=True)
    with server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("\nStopped", flush=True)


def notebooks(extra: list[str]) -> None:
    """Write the reader's copies of the chapters: answer cells unsolved, each solution folded after its exercise.

    ``chapters/`` is the instructor's source: its answer cells hold the model solutions (the book
    build runs them, nbgrader grades against them). This copies its notebooks into ``--dir``
    (default ``reader/``, git-ignored) and turns the chapters into the student versions that the
    download menu, JupyterLite and Binder give (``_ext/student_notebooks.py``). A notebook already
    there is kept, so running it again never overwrites a reader's work; delete a file to get it
    afresh. Only Python's standard library is used.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python3 dev.py notebooks", description=notebooks.__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=ROOT / "reader",
                        help="where the reader's notebooks go (default reader/)")
    args = parser.parse_args(extra)
    target = args.dir.resolve()
    if target == (ROOT / "chapters").resolve():
        sys.exit(f"--dir {args.dir}: that is chapters/, the instructor's source; choose another folder")
    if target.exists() and not target.is_dir():
        sys.exit(f"--dir {args.dir}: exists and is not a folder")
    sys.path.insert(0, str(ROOT / "_ext"))
    import student_notebooks

    target.mkdir(parents=True, exist_ok=True)
    written, kept = [], []
    for source in sorted((ROOT / "chapters").glob("*.ipynb")):
        copy = target / source.name
        if copy.exists():
            kept.append(copy.name)
            continue
        nb = json.loads(source.read_text(encoding="utf-8"))
        if student_notebooks.CHAPTER.fullmatch(source.name):
            nb = student_notebooks.student_notebook(nb)
        copy.write_text(student_notebooks.dumps(nb), encoding="utf-8")
        written.append(copy.name)
    note = f"; {len(kept)} already there, kept (delete one to get it afresh)" if kept else ""
    print(f"{len(written)} notebooks written to {target}{note}")
    print(f"Open them with: {BIN / 'jupyter'} lab {target}", flush=True)


#: what a change to attnlib/ or to a notebook's code most likely breaks, in about a minute:
#: attnlib's unit and property tests and doctests, the explorers (their JavaScript against attnlib
#: in node included) and the exercises' self-checks; no book build, browser, server or nbgrader
QUICK = ["tests/unit", "tests/explorers", "tests/exercises", "attnlib"]
#: two cores: one worker builds the book while the other runs the fast tests, then both share
#: the browser and build tests; a module stays on one worker (its fixtures are made once)
PARALLEL = ["-n", os.environ.get("ATTN_TEST_WORKERS", "2"), "--dist", "loadscope", "--no-loadscope-reorder"]


class Phases:
    """Wall time of each phase of a command, printed at the end (also when a phase fails)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def run(self, name: str, step, *args) -> None:
        start = time.perf_counter()
        try:
            step(*args)
        finally:
            self.seconds[name] = time.perf_counter() - start

    def report(self) -> None:
        total = sum(self.seconds.values())
        parts = ", ".join(f"{name} {s:.0f} s" for name, s in self.seconds.items())
        print(f"\nPhases (wall time): {parts}; total {total:.0f} s", flush=True)


def _basetemp() -> list[str]:
    """pytest's temporary folder in memory (/dev/shm) when the machine has room, for the full suite.

    The run writes about 1.5 GB there (the Binder-like environment, the execution cache, two
    builds, the nbgrader courses) and reads it back many times; on a tmpfs no test waits for the
    disk. The folder is named after this clone, so two clones never share it, and it is removed
    after a run that passed (test-artifacts/ keeps what a person looks at).
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)) or shutil.disk_usage(shm).free < 6 * 2**30:
        return []
    return ["--basetemp", str(shm / f"attn-tests-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}")]


def test(extra: list[str]) -> None:
    # Two pytest workers and the processes they start (kernels, book builds, nbgrader) share the
    # machine's cores: OpenBLAS's own threads, one per core in every process, would only compete with
    # them (two numpy training processes on two cores took 9.6-11.9 s of CPU with two BLAS threads each
    # for what one thread each did in 7.5 s, with the same numbers; attnlib._threads). A reader's own
    # runs keep the default; set OPENBLAS_NUM_THREADS yourself to test with more.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    quick = "--quick" in extra
    extra = [a for a in extra if a != "--quick"]
    phases = Phases()
    try:
        phases.run("install", ensure_env, "test")
        phases.run("npm", ensure_node_modules)
        phases.run("ruff", run, [BIN / "ruff", "check", "."])
        if quick:
            args = [*PARALLEL, "--durations=10", *QUICK, *extra]
        elif extra:
            args = extra  # a chosen selection, e.g. `-k softmax`: plain pytest, no coverage
        else:
            coverage = ["--cov=attnlib", "--cov-report=term-missing:skip-covered", "--cov-fail-under=95"]
            args = [*PARALLEL, *coverage, "--durations=25", *_basetemp()]
        phases.run("pytest", run, [PY, "-m", "pytest", *args])
        if "--basetemp" in args:
            shutil.rmtree(args[args.index("--basetemp") + 1], ignore_errors=True)
    finally:
        phases.report()
    if quick:
        print("The quick loop passed. The full suite (book builds, browsers, nbgrader, the Binder-like "
              "environment; what CI runs): python3 dev.py test", flush=True)


def main(argv: list[str]) -> None:
    commands = {"book": book, "pdf": pdf, "serve": serve, "notebooks": notebooks, "test": test}
    if not argv or argv[0] not in commands:
        sys.exit(__doc__)
    try:
        commands[argv[0]](argv[1:])
    except subprocess.CalledProcessError as exc:
        sys.exit(exc.returncode or 1)


if __name__ == "__main__":
    main(sys.argv[1:])
