"""Prepare a built JupyterLite site for an offline browser test.

The lite site that the book build makes (``<html>/lite``) loads the Pyodide
runtime and the Pyodide packages from the Pyodide CDN when a reader opens it.
The test machine reaches no CDN, so :func:`offline_lite_site` copies the site
and points the copy at files that come from the registries instead:

* the Pyodide runtime from npm (``node_modules/pyodide``, the version
  jupyterlite-pyodide-kernel 0.8.6 is built for), served from the site as
  ``static/pyodide/``;
* the pure-Python wheels the kernel installs at start-up (``micropip``,
  ``ipython`` and its dependencies, ``jedi``, ``comm``) downloaded from PyPI
  by ``pip download`` at the versions of Pyodide's lock file. Pyodide's own
  copies of these wheels differ byte for byte from PyPI's, so the copy's
  ``pyodide-lock.json`` carries the PyPI files' sha256 (``comm``, which the
  lock does not list, is added);
* ``numpy``, ``matplotlib`` and ``sympy`` are removed from the kernel's
  preload list: their browser builds exist only on the Pyodide CDN (PyPI has
  no browser build of numpy or matplotlib), so nothing that imports them can
  run offline. The attnlib and ipywidgets wheels stay preloaded exactly as the
  book build registered them.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from support.paths import ARTIFACTS, ROOT

NPM_PYODIDE = ROOT / "node_modules" / "pyodide"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
#: what the kernel installs before it can run a cell (the Pyodide kernel worker's start-up), and
#: typing-extensions, which the book preloads for anywidget and psygnal
KERNEL_NEEDS = ("micropip", "jedi", "ipython", "typing-extensions")
#: Pyodide builds that only the CDN has
CDN_ONLY = ("numpy", "matplotlib", "sympy")
WHEEL_CACHE = ARTIFACTS / "lite-wheels"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(packages: dict, roots: tuple[str, ...]) -> list[str]:
    seen: list[str] = []
    todo = [_norm(n) for n in roots]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.append(name)
            todo.extend(_norm(d) for d in packages[name]["depends"])
    return sorted(seen)


def download_wheels(pins: list[str], dest: Path) -> None:
    """``pip download`` pure-Python wheels for Pyodide's Python (3.14) from PyPI, once."""
    dest.mkdir(parents=True, exist_ok=True)
    missing = [pin for pin in pins if not _find(dest, *pin.split("=="))]
    if not missing:
        return
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.14", "--quiet"]
    proc = subprocess.run([*command, "--dest", str(dest), *missing], capture_output=True, text=True)
    assert proc.returncode == 0, f"pip download of the kernel's wheels from PyPI failed:\n{proc.stderr[-3000:]}"


def _find(dest: Path, name: str, version: str) -> list[Path]:
    return [w for w in dest.glob("*.whl") if _norm(w.name.split("-")[0]) == _norm(name) and w.name.split("-")[1] == version]


def _wheel_for(dest: Path, name: str, version: str) -> Path:
    found = _find(dest, name, version)
    assert len(found) == 1, f"expected one {name} {version} wheel in {dest}, found {found}"
    return found[0]


def offline_lite_site(built_lite: Path, dest: Path) -> dict:
    """Copy ``built_lite`` to ``dest`` and make it start its kernel with no host but its own; return a summary."""
    assert (NPM_PYODIDE / "pyodide.mjs").is_file(), f"{NPM_PYODIDE} is missing: run `npm ci` (python3 dev.py test does it)"
    shutil.copytree(built_lite, dest)
    pyodide_dir = dest / "static" / "pyodide"
    pyodide_dir.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copy2(NPM_PYODIDE / name, pyodide_dir / name)

    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    packages = lock["packages"]
    names = _closure(packages, KERNEL_NEEDS)
    comm_version = _installed_version("comm")
    pins = [f"{packages[n]['name']}=={packages[n]['version']}" for n in names] + [f"comm=={comm_version}"]
    download_wheels(pins, WHEEL_CACHE)
    for name in names:
        wheel = _wheel_for(WHEEL_CACHE, packages[name]["name"], packages[name]["version"])
        shutil.copy2(wheel, pyodide_dir / wheel.name)
        packages[name]["file_name"] = wheel.name
        packages[name]["sha256"] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    comm = _wheel_for(WHEEL_CACHE, "comm", comm_version)
    shutil.copy2(comm, pyodide_dir / comm.name)
    packages["comm"] = {
        "name": "comm",
        "version": comm_version,
        "file_name": comm.name,
        "install_dir": "site",
        "sha256": hashlib.sha256(comm.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": ["comm"],
        "depends": ["traitlets"],
    }
    (pyodide_dir / "pyodide-lock.json").write_text(json.dumps(lock))

    config_path = dest / "jupyter-lite.json"
    config = json.loads(config_path.read_text())
    kernel = config["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]
    kernel["pyodideUrl"] = "./static/pyodide/pyodide.mjs"
    kernel["disablePyPIFallback"] = True
    preload = kernel["loadPyodideOptions"]["packages"]
    kernel["loadPyodideOptions"]["packages"] = [p for p in preload if p not in CDN_ONLY]
    config_path.write_text(json.dumps(config, indent=2))
    removed = [p for p in preload if p in CDN_ONLY]
    return {"preload": kernel["loadPyodideOptions"]["packages"], "removed": removed, "wheels": [*names, "comm"]}


def _installed_version(name: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(name)
