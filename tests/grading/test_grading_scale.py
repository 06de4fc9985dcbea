"""benchmarks/grading_scale.py, cheaply: its plan, its arguments, its tables and the projection's arithmetic.

The benchmark itself grades real submissions for minutes; here its dry run checks that the arguments
the instructors' page shows are accepted, and the projection is recomputed by hand from made-up costs.
"""

from __future__ import annotations

import importlib.util
import subprocess

import pytest
from support.paths import BIN, ROOT

SCRIPT = ROOT / "benchmarks" / "grading_scale.py"


def benchmark():
    spec = importlib.util.spec_from_file_location("grading_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dry(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "python"), str(SCRIPT), *args, "--dry-run"], capture_output=True, text=True, timeout=60)


def test_the_pages_arguments_give_the_plan():
    page = (ROOT / "instructors.md").read_text()
    assert "benchmarks/grading_scale.py --submissions 8 --workers 1 2 4 --cost-chapters 1 9 14`" in page
    done = dry("--submissions", "8", "--workers", "1", "2", "4", "--cost-chapters", "1", "9", "14")
    assert done.returncode == 0, done.stderr
    assert "chapter 6, 8 submissions (half honest, half wrong), workers [1, 2, 4]" in done.stdout
    assert "per-submission cost of chapters [1, 6, 9, 14] measured, of the other 13 of the 17 chapters" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers must be a whole number of at least 1, not '0'"),
        (["--workers", "2", "4"], "--workers must include 1 and 2"),
        (["--submissions", "one"], "--submissions must be a whole number of at least 2, not 'one'"),
        (["--chapter", "99"], "chapter 99 has no exercises"),
    ],
)
def test_bad_arguments_get_a_clear_error_naming_the_argument(args, message):
    done = dry(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_the_projection_is_the_stated_model():
    gs = benchmark()
    rows, costs = gs.projection({1: 4.0, 9: 8.0}, [1, 2, 9], slowdown=1.5, write_seconds=0.9, students=1000, cores=(2, 16, 64))
    assert costs == {1: 4.0, 2: 6.0, 9: 8.0}  # the unmeasured chapter costs the mean of the measured ones
    compute = [1000 * 18.0 * 1.5 / n / 3600 for n in (2, 16, 64)]
    floor = 3000 * 0.9 / 3600
    assert [r["hours (compute)"] for r in rows] == pytest.approx(compute)
    assert [r["sqlite write floor h"] for r in rows] == pytest.approx([floor] * 3)
    assert [r["hours"] for r in rows] == pytest.approx([max(c, floor) for c in compute])
    assert rows[2]["hours"] == pytest.approx(floor)  # 64 cores: sqlite's one writer is the limit, not the cores
    assert [r["submissions"] for r in rows] == [3000] * 3
    table = gs.markdown(rows, gs.PROJECTION_COLUMNS).splitlines()
    assert table[0] == "| " + " | ".join(gs.PROJECTION_COLUMNS) + " |"
    assert table[2].startswith("| 2 | 3000 | 3.75 | 0.750 | 3.75 |")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chapter_costs": {}}, "chapter_costs must hold at least one measured chapter"),
        ({"slowdown": 0}, "must be positive"),
        ({"write_seconds": -1.0}, "write_seconds must be a number of at least 0"),
        ({"students": 0}, "students must be a whole number of at least 1"),
        ({"cores": (2, 0)}, "cores must be a whole number of at least 1"),
    ],
)
def test_the_projection_refuses_odd_values(kwargs, message):
    args = {"chapter_costs": {1: 4.0}, "all_chapters": [1], "slowdown": 1.2, "write_seconds": 0.1, **kwargs}
    with pytest.raises(ValueError, match=message):
        benchmark().projection(**args)


def test_a_run_row_has_every_column():
    gs = benchmark()
    phases = {p: 0.5 for p in (*gs.PHASES, "other")}
    row = gs.run_row("sqlite", {"submissions": 10, "workers": 2, "wall": 50.0, "phases": phases}, 80.0, cores=2)
    assert set(row) == set(gs.COLUMNS)
    assert row["s/submission"] == 5.0 and row["s/submission/core"] == 10.0 and row["speed-up"] == 1.6
