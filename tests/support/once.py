"""Expensive things made once per test run and shared by every test and every xdist worker.

A book build, an executed set of chapters, a fresh virtual environment: each is made by the
first test that needs it, under a file lock, into a folder shared by all workers of the run
(the parent of the workers' temporary folders under pytest-xdist, the session's temporary
folder without it). The others wait on the lock and read the result. A failure is recorded
too, so a second worker fails at once with the same message instead of building it again.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder that every worker of this test run shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], dict]) -> dict:
    """``make(folder)`` the first time any worker asks for ``name`` in this run; its JSON result every time.

    ``make`` writes what it produces into ``folder`` and returns a JSON-serialisable dict
    (paths as strings). The dict gets ``"seconds"`` (how long ``make`` took) and ``"waited"``
    (how long this caller waited for another worker's ``make``, 0 for the maker).
    """
    root = run_folder(tmp_path_factory)
    folder, done, failed = root / name, root / f"{name}.json", root / f"{name}.failed"
    asked = time.perf_counter()
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if done.exists():
                return {**json.loads(done.read_text()), "waited": round(time.perf_counter() - asked, 1)}
            if failed.exists():
                pytest.fail(f"{name} failed in another worker of this run:\n{failed.read_text()}", pytrace=False)
            folder.mkdir(parents=True, exist_ok=True)
            start, cpu = time.perf_counter(), _children_cpu()
            try:
                result = make(folder)
            except BaseException as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-4000:]}")
                raise
            result = {**result, "seconds": round(time.perf_counter() - start, 1), "cpu": round(_children_cpu() - cpu, 1)}
            done.write_text(json.dumps(result))
            return {**result, "waited": 0.0}
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
