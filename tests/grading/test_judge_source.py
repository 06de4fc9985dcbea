"""Issue 46: the grader judges what the student wrote, not what the kernel says.

By-hand and measured answers are read from the answer cell's source as typed numbers
(``attnlib.exercises.from_source.typed_answers``); implement exercises run the answer cells' source and
the function on the grader's cases in a fresh process, in the grading sandbox, that has numpy but no
attnlib (``nbgrader_plugins.run_answers``). Every chapter's model solutions keep full marks; the
attacks of the issue that need no notebook kernel are here (the real ``nbgrader autograde`` runs are in
``test_per_student.py``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support.grading import NAMES, model_answer, nbg, nbgrader_plugins, source_notebook
from support.paths import ROOT

from attnlib import variants
from attnlib.exercises import from_source, grading

SEED = 424242
LIMITS = {"cpu": 120, "as": 2 << 30, "nproc": 64, "fsize": 16 << 20, "nofile": 64, "core": 0}
IMPLEMENT = [e for e in variants.EXERCISES.values() if e.kind == "implement"]
TYPED = [e for e in variants.EXERCISES.values() if e.kind in ("by-hand", "measured")]


@pytest.fixture(scope="module")
def hidden(tmp_path_factory) -> list[Path]:
    course = tmp_path_factory.mktemp("course")
    (course / "course_secret.txt").write_text("the course secret")
    return [course]


@pytest.fixture(scope="module")
def notebooks():
    return {name: source_notebook(name) for name in NAMES}


def answer_cells(nb, exercise, seed, changes: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """The (grade id, source) pairs the grader runs for ``exercise``: model answers, or ``changes`` where given."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code" and nbg(cell).get("solution"):
            gid = nbg(cell)["grade_id"]
            cells.append((gid, (changes or {}).get(gid, model_answer(cell, seed))))
    answer = from_source.answer_cell_id(exercise.test_id)
    return cells[: [g for g, _ in cells].index(answer) + 1]


def judged(number: str, cells, hidden, seed=SEED, sandboxed=True) -> list[str]:
    request, arrays = grading.runner_request(number, seed, cells)
    results = nbgrader_plugins.run_answers(request, arrays, hidden, LIMITS, sandboxed, 60)
    return grading.judge_results(number, seed, results, cells[-1][0])


def probe(source: str, hidden, sandboxed=True) -> str:
    """What ``source``, run as an answer cell by the grader's runner, returns from ``f()`` (a string, via 9.2's text case)."""
    cells = [("ch09-ex2-answer", source)]
    request, arrays = grading.runner_request("9.2", None, cells)
    results = nbgrader_plugins.run_answers(request, arrays, hidden, LIMITS, sandboxed, 60)
    out = results["outputs"][0]
    return out.get("string") or out.get("error") or str(out)


@pytest.mark.parametrize("exercise", IMPLEMENT, ids=lambda e: e.number)
def test_every_model_solution_passes_in_the_runner_without_attnlib(exercise, notebooks, hidden):
    nb = notebooks[exercise.assignment]
    for seed in (None, SEED):
        assert judged(exercise.number, answer_cells(nb, exercise, seed), hidden, seed) == [], (exercise.number, seed)


@pytest.mark.parametrize("exercise", TYPED, ids=lambda e: e.number)
def test_every_model_answer_is_read_as_typed_numbers(exercise, notebooks):
    nb = notebooks[exercise.assignment]
    answer = from_source.answer_cell_id(exercise.test_id)
    cell = next(c for c in nb.cells if nbg(c).get("grade_id") == answer)
    for seed in (None, SEED):  # the chapter's own solution, and the typed numbers of a student's seed
        source = model_answer(cell, seed)
        assert grading.judge_source(exercise.number, seed, source) == [], (exercise.number, seed, source)


PROBE = """import sys
def my_causal_mask(n):
    found = []
    try:
        __import__("attnlib")  # at run time (an import statement would be refused before the call, as the grader reads it)
        found.append("attnlib imported")
    except ImportError as exc:
        found.append(type(exc).__name__)
    for path in {paths!r}:
        try:
            open(path).read(10)
            found.append("read " + path)
        except OSError as exc:
            found.append(type(exc).__name__)
    return " ".join(found)
"""


def test_attnlib_cannot_be_imported_nor_its_source_or_the_course_read_in_the_runner(hidden):
    import attnlib

    paths = [attnlib.__file__, str(ROOT / "attnlib" / "core.py"), str(hidden[0] / "course_secret.txt")]
    said = probe(PROBE.format(paths=paths), hidden)
    assert said.split() == ["ModuleNotFoundError", "FileNotFoundError", "FileNotFoundError", "FileNotFoundError"], said
    # without the sandbox (the instructor's explicit opt-out) attnlib is still not importable: numpy is the one package
    assert probe(PROBE.format(paths=[]), hidden, sandboxed=False) == "ModuleNotFoundError"


#: The issue's attacks on an implement exercise, each an answer cell (4.2 and 4.3 of chapter 4).
ATTACKS = {
    "a recompiled copy of attnlib's source": (
        "4.2",
        "import inspect, attnlib\n_copy = {'__name__': 'attnlib.copied', '__package__': 'attnlib'}\n"
        "exec(compile('\\n' + inspect.getsource(attnlib.core), 'copy', 'exec'), _copy)\nmy_softmax = _copy['softmax']",
    ),
    "a wrapper that silences the profiler first": (
        "4.3",
        "import sys\ndef my_attention(Q, K, V):\n    sys.setprofile(None)\n    return attnlib.attention(Q, K, V).output",
    ),
    "another attnlib routine": ("4.3", "def my_attention(Q, K, V):\n    return attnlib.blocked.chunked_attention(Q, K, V, block_size=2)"),
    "a stand-in for the grading module": (
        "4.3",
        "import sys, types\nsys.modules['attnlib.exercises.grading'] = types.ModuleType('fake')\n"
        "def my_attention(Q, K, V):\n    return Q",
    ),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_issues_attacks_on_an_implement_exercise_score_zero_with_a_reason(attack, notebooks, hidden):
    number, source = ATTACKS[attack]
    exercise = variants.EXERCISES[number]
    answer = from_source.answer_cell_id(exercise.test_id)
    failures = judged(number, answer_cells(notebooks["ch04"], exercise, SEED, {answer: source}), hidden)
    assert failures, attack
    text = " ".join(failures)
    if attack == "a stand-in for the grading module":  # nothing in the runner hands in: the function itself is judged
        assert "the shape is right but some values are wrong" in text, text
    elif attack == "another attnlib routine":  # read before any call, in the self-check's words (runner.unavailable)
        assert failures == [
            "my_attention uses attnlib.blocked, which the grader does not have: it runs your answer cells, in order, with numpy "
            "as np (and a softmax standing in for attnlib.softmax), but neither attnlib nor the notebook's other cells and variables."
        ], failures
    else:
        assert "attnlib" in text and "numpy as np" in text, text  # the reason says what the runner has


def test_a_cell_that_fails_in_the_runner_costs_only_its_exercise(notebooks, hidden):
    """4.1's answer uses the notebook's variables; 4.2 and 4.3, in the same run after it, keep full marks."""
    changes = {"ch04-ex1-answer": "o_by_hand = (variants.answers(variants.variant('4.1', seed))['o_by_hand'])"}
    for number in ("4.2", "4.3"):
        cells = answer_cells(notebooks["ch04"], variants.EXERCISES[number], SEED, changes)
        assert judged(number, cells, hidden) == [], number
    why = grading.judge_source("4.1", SEED, changes["ch04-ex1-answer"])
    assert len(why) == 1 and why[0].startswith("o_by_hand is not read as typed numbers: variants.answers(variants.variant"), why


def test_a_missing_function_names_the_cell_that_stopped(notebooks, hidden):
    exercise = variants.EXERCISES["9.2"]
    cells = answer_cells(notebooks["ch09"], exercise, SEED, {"ch09-ex2-answer": "my_causal_mask = checks.causal_mask"})
    (failure,) = judged("9.2", cells, hidden)
    assert failure.startswith("my_causal_mask is not defined as a function by your answer cells (your answer cell ch09-ex2-answer")
    assert "NameError: name 'checks' is not defined" in failure


def test_an_exit_or_an_endless_function_costs_that_exercise_in_bounded_time(hidden):
    began = time.perf_counter()
    exit_cell = [("ch09-ex2-answer", "import os\nos._exit(3)")]
    stopped = "my_causal_mask: the grader's process stopped in your answer cell ch09-ex2-answer (exit code 3)"
    assert judged("9.2", exit_cell, hidden) == [stopped]
    loop = "def my_causal_mask(n):\n    while True:\n        try:\n            pass\n        except BaseException:\n            pass"
    endless = [("ch09-ex2-answer", loop)]
    (failure,) = judged("9.2", endless, hidden)
    assert "ran past" in failure or "did not finish within the time limit" in failure, failure
    assert time.perf_counter() - began < 120


@pytest.mark.parametrize(
    ("source", "right"),
    [
        ("masked_row = [0.5875, 0.0, 0.4125]", True),
        ("masked_row = [0.5875, 0, 1 - 0.5875]", True),
        ("import math\nw = math.exp(1) / (1 + math.exp(1))\nmasked_row = [0.5875, 0.0, 0.4125]", True),
        ("masked_row = variants.answers(variants.variant('9.1', seed))['masked_row']", False),
        ("masked_row = attnlib.softmax([1.0, 0.5])", False),
        ("masked_row = my_row", False),
        ("for k in range(1):\n    masked_row = [0.5875, 0.0, 0.4125]", False),
    ],
)
def test_a_by_hand_answer_is_the_numbers_typed(source, right):
    failures = grading.judge_source("9.1", None, source)
    assert (failures == []) is right, failures
    if not right:
        assert failures[0].startswith("masked_row is not read as typed numbers: "), failures


def test_the_runner_file_imports_nothing_of_attnlib():
    from attnlib.exercises import runner

    text = Path(runner.__file__).read_text()
    imports = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert imports and not any("attnlib" in line or line.startswith("from .") for line in imports), imports
    assert os.path.basename(runner.__file__) == "runner.py"


def test_the_runners_sandbox_shows_numpy_but_neither_the_clone_nor_another_package(tmp_path):
    folders = nbgrader_plugins.numpy_folders()
    cmd = nbgrader_plugins.sandbox_command(["python"], tmp_path / "k", [], {}, None, library=False, extra=tuple(folders))
    shown = [cmd[k + 1] for k, arg in enumerate(cmd) if arg in ("--ro-bind", "--bind")]
    assert all(str(f) in shown for f in folders), shown
    assert str(ROOT) not in shown and not any(Path(s).name in ("site-packages", "dist-packages") for s in shown), shown
    covered = [cmd[k + 1] for k, arg in enumerate(cmd) if arg == "--tmpfs"]
    for folder in nbgrader_plugins.package_folders():  # a package folder inside a shown one is covered by an empty one
        inside = [s for s in shown if folder.startswith(s.rstrip("/") + "/")]
        assert not inside or os.path.realpath(folder) in covered, (folder, inside)


def _graded_notebook(answer: str, kernel_error: bool):
    import nbformat

    def cell(gid, source, **meta):
        return nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade_id": gid, **meta}})

    test = cell("ch09-ex2-test", "hand_in(...)", grade=True, solution=False, points=2)
    if kernel_error:  # what the kernel's own check said: not trusted either way
        test.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="the kernel's verdict", traceback=[])]
    return nbformat.v4.new_notebook(cells=[cell("ch09-seed", "seed = None"), cell("ch09-ex2-answer", answer, solution=True), test])


@pytest.mark.parametrize("sandbox", [True, False])
def test_judge_hand_ins_takes_the_outside_verdict_and_names_the_opt_out(sandbox, tmp_path, caplog):
    """The plugin as autograde runs it: the verdict from the answer cells counts, whatever the kernel said; grading
    without the sandbox (``c.SandboxExecute.sandbox = False``) is said in the log."""
    import logging

    from traitlets.config import Config

    cfg = Config()
    cfg.SandboxExecute.sandbox = sandbox
    cfg.CourseDirectory.root = str(tmp_path)
    log = logging.getLogger("judge-hand-ins-test")
    resources = {"nbgrader": {"db_url": f"sqlite:///{tmp_path}/gradebook.db", "student": "s001", "assignment": "ch09"}}
    right = "def my_causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))"
    with caplog.at_level(logging.INFO, logger=log.name):
        nb, _ = nbgrader_plugins.JudgeHandIns(config=cfg, log=log).preprocess(_graded_notebook(right, True), resources)
        (test,) = [c for c in nb.cells if nbg(c)["grade_id"] == "ch09-ex2-test"]
        assert not any(o.output_type == "error" for o in test.outputs)  # right from the source: the points count
        assert "Graded outside the notebook, from your answer cells: right." in test.outputs[0].text
        wrong = _graded_notebook("my_causal_mask = attnlib.causal_mask", False)
        nb, _ = nbgrader_plugins.JudgeHandIns(config=cfg, log=log).preprocess(wrong, resources)
        (test,) = [c for c in nb.cells if nbg(c)["grade_id"] == "ch09-ex2-test"]
        (error,) = [o for o in test.outputs if o.output_type == "error"]
        assert error.ename == "NotRight" and "NameError: name 'attnlib' is not defined" in error.evalue, error.evalue
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert ("Grading WITHOUT the sandbox (c.SandboxExecute.sandbox = False): students' code runs as you" in warned) is (not sandbox)
