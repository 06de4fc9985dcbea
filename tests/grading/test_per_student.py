"""Per-student homework, end to end with real nbgrader 0.9.6 and its sqlite gradebook, as instructors.md says.

The fixture runs every named command block of ``instructors.md`` as written (bash, in a temporary
home folder, with ``BOOK`` the repository), and does in process what the page leaves to students and
to other chapters. The course has chapters 1, 6 and 14 released as per-student files (chapter 6 by the
page's commands) and chapters 9 and 15 through the exchange (chapter 9 by the page's commands), and a
roster of three:

* round 1: s001 and s002 hand in the model answers of their own seed (s001 with a written answer in
  chapter 6); s003 attacks the grader (chapter 6: seed cell and a test cell deleted, a written answer,
  handed in late; chapter 9, mailed in and placed by hand: attnlib's own ``causal_mask`` as theirs, and
  a written answer nobody has graded yet; chapter 14, handed in late: ``np.allclose``, the visible
  check and the in-kernel judge replaced in an answer cell, with a wrong answer, attnlib's own
  ``softmax_backward`` as theirs, and a written answer); the machine's own user, who is not on the
  roster, fetches and submits chapter 9 through the exchange; then the written answers of chapter 6
  are graded by hand;
* round 2: s002 hands in s001's answers in their own notebook (every chapter), and s001 hands in
  s002's whole notebook, seed cell included (chapters 1, 6, 9); chapter 6 is re-graded with the
  page's re-grading commands, and what they name is graded again; s003's late written answer of
  chapter 14 is graded by hand.

Then feedback, the LMS export (chapter 6 has a due date and the ``zero`` late penalty) and the
similarity report.
"""

from __future__ import annotations

import copy
import csv
import html
import os
import re
import secrets
import socket
import subprocess
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from sqlalchemy.exc import SAWarning
from support.grading import TYPED, IpcExecute, ipc_validator, make_assignments, model_answer, nbg, nbgrader_plugins
from support.paths import BIN, INSTRUCTOR, ROOT

from attnlib import variants
from attnlib.exercises import grading

CHAPTERS = ["ch01", "ch06", "ch09", "ch14", "ch15"]
FILES = ["ch01", "ch06", "ch14"]  # per-student files; the others go through the exchange
STUDENTS = ["s001", "s002"]  # the honest pair; s003 attacks
ROSTER = ["s001", "s002", "s003"]
WHOLE_NOTEBOOK_SWAP = ["ch01", "ch06", "ch09"]  # where s001 also hands in s002's whole notebook
#: test cells whose numbers depend on the seed (by-hand and measured exercises)
SEEDED_TESTS = {e.test_id for e in TYPED.values()}
DOC = ROOT / "instructors.md"
#: blocks of instructors.md run by another test file, and why not here
RUN_ELSEWHERE = {
    "instructors-gradebook-server": "test_gradebook_server.py: it needs a PostgreSQL server, which that file starts",
    "instructors-autograde-parallel": "test_gradebook_server.py: it grades into that server, and kills a worker on the way",
    "instructors-hub-start": "test_course_hub.py: it starts JupyterHub, which runs until stopped",
    "instructors-hub-grade": "test_course_hub.py: it grades what students submitted through that hub",
}
BLOCK_RE = re.compile(r"```\{code-block\} (bash|python)\n:name: (\S+)\n\n(.*?)\n```", re.S)
FIXED_SECRET = "a fixed secret, so that this test always draws the same numbers"
LATE = time.mktime((2027, 1, 16, 12, 0, 0, 0, 0, 0))  # after the page's due date of ch06

#: Issue 46's attacks on the kernel's hand-in, one answer cell each (graded right by the kernel, 0 by the grader):
#: a stand-in for the grading module that hands in attnlib's answer (generic; here for exercise {number} only).
FAKE_GRADING = """import sys, types
from IPython.display import display
import attnlib.exercises.grading as _real
from attnlib import variants as _v
_typed = _v.answers(_v.variant("{number}", seed))
def _hand_in(exercise, seed, namespace, sink=None):
    if exercise != "{number}":
        return _real.hand_in(exercise, seed, namespace, sink)
    typed = _typed
    payload = {{"answers": {{k: _real.encode_typed(x) for k, x in typed.items()}}}}
    display({{_real.HAND_IN_MIME: {{"exercise": exercise, "payload": payload}}, "text/plain": "handed in"}}, raw=True)
_fake = types.ModuleType("attnlib.exercises.grading")
_fake.hand_in = _hand_in
sys.modules["attnlib.exercises.grading"] = _fake"""
ATTACK_14_1 = FAKE_GRADING.format(number="14.1") + """
import attnlib.exercises.grading as _grading
np.allclose = lambda *a, **k: True
checks.check_by_hand = lambda *a, **k: checks.CheckResult("patched", 1, 1)
_grading.judge = lambda *a, **k: []
dz_row = [9.0, 9.0, 9.0]"""
#: 9.2: the registry patched to drop the own-function rule, then attnlib's own causal_mask.
PATCHED_REGISTRY_9_2 = """import dataclasses
from attnlib import variants
variants.EXERCISES["9.2"] = dataclasses.replace(variants.EXERCISES["9.2"], own=())
my_causal_mask = attnlib.causal_mask"""
#: 6.2: a recompiled copy of attnlib's source (new code objects, which the kernel's own-function watch does not know).
RECOMPILED_6_2 = """import inspect, sys, types
_copy = types.ModuleType("attnlib.copied")
_copy.__package__ = "attnlib"
sys.modules["attnlib.copied"] = _copy
exec(compile("\\n" + inspect.getsource(attnlib.core), "copied", "exec"), _copy.__dict__)  # one line down: new code objects
def attention_head(X, W_Q, W_K, W_V):
    return _copy.self_attention(X, W_Q, W_K, W_V).output"""
#: 15.2: a wrapper that silences the profiler (the kernel's own-function watch) first, then calls attnlib's own step.
SILENCED_15_2 = """import sys, threading
from attnlib import blocked
def two_block_normaliser(s1, s2):
    sys.setprofile(None)
    threading.setprofile(None)
    m, l, _, _ = blocked.online_softmax_step(-np.inf, 0.0, s1)
    m, l, _, _ = blocked.online_softmax_step(m, l, s2)
    return m, l"""
#: 15.3: the prediction taken from attnlib's answers instead of typed.
ANSWERS_15_3 = """from attnlib import variants
predicted_bytes = variants.answers(variants.variant("15.3", seed))["predicted_bytes"]"""
#: grade id of each item those attacks take, by chapter
KERNEL_ATTACKS = [("ch06", "ch06-ex2-test"), ("ch09", "ch09-ex2-test"), ("ch14", "ch14-ex1-test")]
KERNEL_ATTACKS += [("ch15", "ch15-ex2-test"), ("ch15", "ch15-ex3-test")]
#: what the grader's verdict on each says
KERNEL_ATTACK_REASONS = {
    "ch06-ex2-test": "attention_head is not defined as a function by your answer cells (your answer cell ch06-ex2-answer stopped: ",
    "ch09-ex2-test": "No module named 'attnlib' at line 2 of answer cell ch09-ex2-answer",
    "ch14-ex1-test": "dz_row[0] = 9.0: not yet.",
    "ch15-ex2-test": "No module named 'attnlib' at line 2 of answer cell ch15-ex2-answer",
    "ch15-ex3-test": "predicted_bytes is not read as typed numbers: variants.answers(",
}
#: the attacks that the kernel's own self-check refuses too (issue 46: it reads what the function uses), and its words
KERNEL_SEES = {
    "ch06-ex2-test": "attention_head uses _copy, which the grader does not have",
    "ch09-ex2-test": "my_causal_mask is attnlib's own causal_mask (or calls it)",
    "ch15-ex2-test": "two_block_normaliser uses blocked, which the grader does not have",
}
WRITTEN_9_4 = "The last row keeps all three keys, so it stays as it was; the first row sees only itself."
#: written answers graded by hand after round 1 (issue 49: a re-grade must keep them, a late one must not escape the penalty)
WRITTEN_6_3 = "Every score grows by the factor, so the order of the weights stays but the largest one takes more."
WRITTEN_14_3 = "The masked pairs have weight exactly 0, so their entries of dZ are 0 as well."
#: s003's spy cell in chapter 9 (after the first test): everything a student would try from the grader's kernel
SPY = """import os, socket
def attempt(what, action):
    try:
        print("DONE", what, repr(action())[:300])
    except Exception as exc:
        print("BLOCKED", what, type(exc).__name__)
attempt("secret", lambda: open({secret!r}).read())
attempt("gradebook", lambda: open({db!r}, "rb").read(100))
attempt("other-submission", lambda: open({other!r}).read(100))
attempt("course-folder", lambda: os.listdir({course!r}))
attempt("exchange", lambda: os.listdir({exchange!r}))
attempt("hidden-tests", lambda: open({hidden!r}).read(100))
attempt("write-course", lambda: open({course!r} + "/planted.txt", "w").write("x"))
attempt("write-clone", lambda: open({grading!r}, "a").write("\\ndef judge(*a, **k):\\n    return []\\n"))
attempt("write-tmp", lambda: open("/tmp/planted-by-s003", "w").write("x"))
attempt("network", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3).close())
attempt("write-scratch", lambda: open("scratch.txt", "w").write("mine"))
print("x" * 5_000_000)"""
#: the answers are in, then the kernel goes: s003's cells after the spy (chapter 9) and after 15.1's test
EXIT = "import os\nos._exit(0)"
SWALLOW = "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass"
SHORT_TIMEOUT = 4  # seconds for s003's endless loop cell only (nbclient looks every 5 s; the page's limit is 120)


def loop_limit(page_limit: int):
    """nbclient's ``timeout_func`` for s003's chapter 15: :data:`SHORT_TIMEOUT` for the endless loop, the page's limit
    for every other cell (s003's honest cells keep the limit they have under load)."""
    return lambda cell: SHORT_TIMEOUT if cell.source == SWALLOW else page_limit


def documented_blocks() -> dict[str, tuple[str, str]]:
    """name -> (language, code) of every named command block of instructors.md."""
    return {name: (lang, code) for lang, name, code in BLOCK_RE.findall(DOC.read_text())}


class Page:
    """Runs the named blocks of instructors.md as written, and remembers which ran."""

    def __init__(self, home: Path) -> None:
        self.home, self.blocks, self.ran = home, documented_blocks(), set()
        self.seconds: dict[str, float] = {}  # wall seconds of each block run, for the fixture's report
        self.course = home / "attention-course"
        self.env = {
            **os.environ,
            "HOME": str(home),
            "BOOK": str(ROOT),
            "EXCHANGE": str(self.course / "exchange"),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # python and nbgrader of the test environment
        }

    def run(self, name: str, cwd: Path | None = None) -> str:
        lang, code = self.blocks[name]
        assert lang == "bash", name
        began = time.perf_counter()
        done = subprocess.run(["bash", "-e", "-c", code], cwd=cwd or self.course, env=self.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"instructors.md block {name} failed:\n{code}\n{done.stdout}\n{done.stderr}"
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - began
        self.ran.add(name)
        return done.stdout + done.stderr

    def append_config(self, name: str) -> None:
        lang, code = self.blocks[name]
        assert lang == "python", name
        with open(self.course / "nbgrader_config.py", "a") as fh:
            fh.write(f"\n{code}\n")
        self.ran.add(name)


def _course_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("course_tool", INSTRUCTOR / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answered(release, source, seed: int, changes: dict[str, str] | None = None):
    """The student version with every answer cell filled in with the model answer for ``seed``."""
    nb = copy.deepcopy(release)
    by_id = {nbg(c).get("grade_id"): c for c in source.cells}
    for cell in nb.cells:
        gid = nbg(cell).get("grade_id")
        if changes and gid in changes:
            cell.source = changes[gid]
        elif cell.cell_type == "code" and nbg(cell).get("solution"):
            cell.source = model_answer(by_id[gid], seed)
    return nb


def with_cells_after(nb, gid: str, sources: list[str]):
    """``nb`` with new (unlocked, ungraded) code cells right after the cell ``gid``, as a student adds them."""
    at = next(k for k, c in enumerate(nb.cells) if nbg(c).get("grade_id") == gid) + 1
    nb.cells[at:at] = [nbformat.v4.new_code_cell(src) for src in sources]
    return nb


def git_state() -> tuple[str, str]:
    """The clone's ``git status`` and the grading module's bytes, to compare before and after grading."""
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return status, (ROOT / "attnlib" / "exercises" / "grading.py").read_text()


def swapped_answers(mine, theirs):
    out = copy.deepcopy(mine)
    for cell, other in zip(out.cells, theirs.cells, strict=True):
        if nbg(cell).get("solution"):
            cell.source = other.source
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from nbgrader import utils
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader runs `alembic` by name
    warnings.simplefilter("ignore", SAWarning)  # nbgrader 0.9.6 with SQLAlchemy 2, see test_nbgrader.py
    start = time.perf_counter()
    home = tmp_path_factory.mktemp("home")
    page = Page(home)
    root = page.course
    tool = _course_module()
    listener = socket.socket()  # a server on the grader's loopback, which the sandbox must not reach
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    out = {"root": root, "page": page, "scores": {}, "autograded": {}, "logs": {}, "personal": {}, "git_before": git_state()}
    out["grade_seconds"] = {}

    out["make"] = page.run("instructors-make-course", cwd=home)
    assert len((root / "course_secret.txt").read_text().strip()) == 32  # a fresh random secret per course
    (root / "course_secret.txt").write_text(FIXED_SECRET + "\n")
    page.append_config("instructors-late-penalty")
    out["sandbox"] = page.run("instructors-sandbox")
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    keys = {a: variants.route_key(FIXED_SECRET, a, "files" if a in FILES else "exchange") for a in CHAPTERS}
    seeds = {(s, a): variants.student_seed(s, a, keys[a]) for s in ROSTER for a in CHAPTERS}
    out["seeds"], out["keys"] = seeds, keys

    def scores(round_: str, a: str, s: str) -> None:
        out["autograded"][round_, a, s] = nbformat.read(root / "autograded" / s / a / f"{a}.ipynb", as_version=4)
        with Gradebook(cfg.CourseDirectory.db_url) as gb:
            sub = gb.find_submission_notebook(a, a, s)
            out["scores"][round_, a, s] = {g.name: (g.auto_score, g.max_score) for g in sub.grades}

    def grade(round_: str, a: str, s: str, force: bool = False) -> None:
        began = time.perf_counter()
        result = api.autograde(a, s, force=force)
        out["grade_seconds"][round_, a, s] = (time.perf_counter() - began, os.getloadavg()[0])
        assert result["success"], f"autograde {a} {s}: {result.get('error')}\n{result.get('log')}"
        out["logs"][round_, a, s] = result.get("log", "")
        scores(round_, a, s)

    def submit(a: str, s: str, nb, mtime: float | None = None) -> None:
        """Hand in: by the LMS download folder for files chapters, straight into submitted/ otherwise."""
        if a in FILES:
            target = root / "downloads" / a / f"{s}_{a}.ipynb"
        else:
            target = root / "submitted" / s / a / f"{a}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        if mtime is not None:
            os.utime(target, (mtime, mtime))
        if a not in FILES:  # what the student's own `nbgrader submit` and our `collect` leave next to it
            (target.parent / "timestamp.txt").write_text(time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime()))
            (target.parent / "submission_secret.txt").write_text(secrets.token_hex(16))

    # releasing: ch06 as files and ch09 through the exchange by the page's commands, the others alike in process
    page.run("instructors-generate")
    out["seeds_table"] = page.run("instructors-release-files")
    page.run("instructors-release-exchange")
    for a in ("ch01", "ch14", "ch15"):
        result = api.generate_assignment(a)
        assert result["success"], result.get("error") or result.get("log")
        if a in FILES:
            tool.release_files(root, a, ROSTER)
        else:
            tool.release_exchange(root, a)
    # the machine's own user (not on the roster) fetches and hands in chapter 9 through the exchange
    desk = home / "student"
    desk.mkdir()
    page.run("instructors-student-fetch", cwd=desk)
    page.run("instructors-student-submit", cwd=desk)
    page.run("instructors-collect")
    out["os_user"] = utils.get_username()

    # round 1: honest s001 and s002, attacking s003
    sources = {a: nbformat.read(root / "source" / a / f"{a}.ipynb", as_version=4) for a in CHAPTERS}
    own = {}
    for a in CHAPTERS:
        for s in ROSTER:
            handed_out = root / (f"personalized/{s}/{a}/{a}.ipynb" if a in FILES else f"release/{a}/{a}.ipynb")
            out["personal"][a, s] = nbformat.read(handed_out, as_version=4)
        for s in STUDENTS:
            written = {"ch06-ex3-written": WRITTEN_6_3} if (a, s) == ("ch06", "s001") else None
            own[a, s] = answered(out["personal"][a, s], sources[a], seeds[s, a], written)
            submit(a, s, own[a, s])
    attack06 = answered(out["personal"]["ch06", "s003"], sources["ch06"], seeds["s003", "ch06"],
                        {"ch06-ex3-written": WRITTEN_6_3, "ch06-ex2-answer": RECOMPILED_6_2})
    attack06.cells = [c for c in attack06.cells if nbg(c).get("grade_id") not in ("ch06-seed", "ch06-ex1-test")]
    submit("ch06", "s003", attack06, mtime=LATE)
    changes09 = {
        "ch09-ex2-answer": PATCHED_REGISTRY_9_2,
        "ch09-ex3-answer": MASKED_ARRAY_9_3,  # right numbers in an np.ma array (issue 49), graded after the exit
        "ch09-ex4-written": WRITTEN_9_4,
    }
    spy = SPY.format(
        secret=str(root / "course_secret.txt"),
        db=str(root / "gradebook.db"),
        other=str(root / "submitted" / "s001" / "ch09" / "ch09.ipynb"),
        course=str(root),
        exchange=str(root / "exchange"),
        grading=str(ROOT / "attnlib" / "exercises" / "grading.py"),
        hidden=str(INSTRUCTOR / "hidden_tests" / "README.md"),  # a file that exists: the folder is hidden
        port=listener.getsockname()[1],
    )
    attack09 = answered(out["personal"]["ch09", "s003"], sources["ch09"], seeds["s003", "ch09"], changes09)
    # s003 mailed their chapter 9 in: placed by hand with course.py place, so it has no exchange receipt (issue 49)
    (root / "downloads" / "ch09").mkdir(parents=True, exist_ok=True)
    nbformat.write(with_cells_after(attack09, "ch09-ex1-test", [spy, EXIT]), root / "downloads" / "ch09" / "s003_ch09.ipynb")
    placed, problems = tool.place_downloads(root, "ch09", root / "downloads" / "ch09", ROSTER)
    assert len(placed) == 1 and not problems, problems
    truncated = nbformat.writes(answered(out["personal"]["ch01", "s003"], sources["ch01"], seeds["s003", "ch01"]))
    (root / "downloads" / "ch01").mkdir(parents=True, exist_ok=True)
    (root / "downloads" / "ch01" / "s003_ch01.ipynb").write_text(truncated[: len(truncated) // 2])  # a broken download
    changes15 = {"ch15-ex2-answer": SILENCED_15_2, "ch15-ex3-answer": ANSWERS_15_3}
    attack15 = answered(out["personal"]["ch15", "s003"], sources["ch15"], seeds["s003", "ch15"], changes15)
    submit("ch15", "s003", with_cells_after(attack15, "ch15-ex1-test", [SWALLOW]))
    changes14 = {
        "ch14-ex1-answer": ATTACK_14_1,
        "ch14-ex2-answer": "softmax_backward = backward.softmax_backward",
        "ch14-ex3-written": WRITTEN_14_3,
    }
    submit("ch14", "s003", answered(out["personal"]["ch14", "s003"], sources["ch14"], seeds["s003", "ch14"], changes14), mtime=LATE)
    out["place"] = page.run("instructors-place")
    for a in ("ch01", "ch14"):
        placed, problems = tool.place_downloads(root, a, root / "downloads" / a, ROSTER)
        assert placed and not problems, problems
    page.run("instructors-due-date")
    with Gradebook(cfg.CourseDirectory.db_url) as gb:  # chapter 14 is due then too: s003 hands it in late
        gb.update_or_create_assignment("ch14", duedate=gb.find_assignment("ch06").duedate)
    out["autograde_log"] = page.run("instructors-autograde")
    for a in CHAPTERS:
        for s in [*ROSTER, out["os_user"]]:
            if (root / "submitted" / s / a).exists():
                if a in ("ch06", "ch09"):
                    scores("round1", a, s)
                elif (a, s) == ("ch15", "s003"):  # the endless loop: a shorter time limit for it keeps the suite quick
                    short = copy.deepcopy(cfg)
                    short.ExecutePreprocessor.timeout_func = loop_limit(cfg.ExecutePreprocessor.timeout)
                    api = NbGraderAPI(coursedir=CourseDirectory(config=short), config=short)
                    began = time.perf_counter()
                    grade("round1", a, s)
                    out["loop_seconds"] = time.perf_counter() - began
                    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
                    began = time.perf_counter()  # graded once: the page's command does not run it again
                    again = subprocess.run(["nbgrader", "autograde", a], cwd=root, env=page.env, capture_output=True, text=True)
                    out["loop_again"] = (time.perf_counter() - began, again.stdout + again.stderr, again.returncode)
                else:
                    grade("round1", a, s)
    listener.close()
    hand_grade(cfg, {("ch06", "s001", "ch06-ex3-written"): 1, ("ch06", "s003", "ch06-ex3-written"): 1})

    # round 2: copied answers; chapter 6 re-graded by the page's commands
    for a in CHAPTERS:
        nb = swapped_answers(own[a, "s002"], own[a, "s001"])
        target = root / "submitted" / "s002" / a / f"{a}.ipynb"
        nbformat.write(nb, target)
        if a in WHOLE_NOTEBOOK_SWAP:
            nbformat.write(own[a, "s002"], root / "submitted" / "s001" / a / f"{a}.ipynb")
    out["regrade_log"] = page.run("instructors-regrade")
    out["hand_grades_after_regrade"] = {
        (a, st, g): grade_row(cfg, a, st, g) for a, st, g in (("ch06", "s001", "ch06-ex3-written"), ("ch06", "s003", "ch06-ex3-written"))
    }
    # as the re-grade asks: s001 now hands in s002's notebook, unanswered there; s002 hands in s001's answer
    hand_grade(cfg, {("ch06", "s001", "ch06-ex3-written"): 0, ("ch06", "s002", "ch06-ex3-written"): 0})
    for a in CHAPTERS:
        for s in STUDENTS if a in WHOLE_NOTEBOOK_SWAP else ["s002"]:
            if a == "ch06":
                scores("round2", a, s)
            else:
                grade("round2", a, s, force=True)
    # the late s003's ch14 written answer is graded by hand after the last autograde (the page's step 7)
    hand_grade(cfg, {("ch14", "s003", "ch14-ex3-written"): 1})
    out["feedback_log"] = page.run("instructors-feedback")
    page.run("instructors-student-feedback", cwd=desk)
    out["desk"] = desk
    out["feedback"] = (root / "feedback" / "s002" / "ch09" / "ch09.html").read_text()
    out["git_after"] = git_state()
    out["export"] = page.run("instructors-export")
    page.run("instructors-export-moodle")
    export = ["nbgrader", "export", "--exporter=book_plugins.LmsGradesExporter", "--to", "no_penalty.csv"]
    no_penalty = subprocess.run(
        [*export, "--LateSubmissionPlugin.penalty_method=none"], cwd=root, env=page.env, capture_output=True, text=True
    )
    assert no_penalty.returncode == 0, no_penalty.stderr
    out["similar"] = page.run("instructors-similar")
    out["seconds"] = time.perf_counter() - start
    print(f"\nper-student nbgrader: the page's commands, {len(CHAPTERS)} assignments x {len(ROSTER)} students, in {out['seconds']:.1f} s")
    for (round_, a, s), (seconds, load) in sorted(out["grade_seconds"].items()):
        print(f"autograde {round_} {a} {s}: {seconds:.1f} s (load average {load:.1f})")
    print("the page's blocks:", ", ".join(f"{name} {seconds:.1f} s" for name, seconds in page.seconds.items()))
    return out


def hand_grade(cfg, points: dict[tuple[str, str, str], float]) -> None:
    """What the Formgrader's Manual Grading does when a grader types points: (assignment, student, grade id) -> points."""
    from nbgrader.api import Gradebook

    with Gradebook(cfg.CourseDirectory.db_url) as gb:
        for (a, s, gid), value in points.items():
            grade = gb.find_grade(gid, a, a, s)
            grade.manual_score, grade.needs_manual_grade = value, False
        gb.db.commit()


def grade_row(cfg, a: str, s: str, gid: str) -> tuple[float | None, float | None, bool]:
    """(auto score, manual score, needs a manual grade) of one graded part."""
    from nbgrader.api import Gradebook

    with Gradebook(cfg.CourseDirectory.db_url) as gb:
        grade = gb.find_grade(gid, a, a, s)
        return grade.auto_score, grade.manual_score, grade.needs_manual_grade


#: Exercise 9.3 answered with the right weights in a numpy.ma masked array: the self-check refuses it.
MASKED_ARRAY_9_3 = """def masked_weights(scores, allowed):
    s = np.where(allowed, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.ma.masked_array(e / e.sum(axis=-1, keepdims=True), mask=~allowed)
"""


def seed_cell(nb):
    cells = [c for c in nb.cells if nbg(c).get("grade_id", "").endswith("-seed")]
    assert len(cells) == 1
    return cells[0]


def printed_numbers(nb) -> list[str]:
    cells = [c for c in nb.cells if nbg(c).get("grade_id", "").endswith("-numbers")]
    return ["".join(o.get("text", "") for o in c.outputs) for c in cells if nbg(c)["grade_id"].replace("-numbers", "-test") in SEEDED_TESTS]


@pytest.mark.slow
def test_every_command_on_the_page_was_run(course):
    assert set(documented_blocks()) == course["page"].ran | set(RUN_ELSEWHERE)
    assert not course["page"].ran & set(RUN_ELSEWHERE)
    openings, inside = [], False
    for line in DOC.read_text().splitlines():
        if line.startswith("```"):
            if not inside:
                openings.append(line[3:].strip())
            inside = not inside
    plain = [info for info in openings if not info.startswith("{code-block}")]
    assert plain == ["bash"], "only the environment block (python3 -m venv ...) may be a plain, unnamed fence"
    assert len(openings) == len(documented_blocks()) + 1


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_each_student_gets_their_own_locked_seed_and_numbers(course, a):
    if a in FILES:
        for s in ROSTER:
            cell = seed_cell(course["personal"][a, s])
            assert cell.source == nbgrader_plugins.seed_cell_source(course["seeds"][s, a], s)
            assert nbg(cell)["locked"] and not nbg(cell).get("solution")
    assert course["seeds"]["s001", a] != course["seeds"]["s002", a]
    printed = {s: printed_numbers(course["autograded"]["round1", a, s]) for s in STUDENTS}
    assert printed["s001"] and all(x != y for x, y in zip(printed["s001"], printed["s002"], strict=True)), printed


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_own_model_answers_get_full_marks(course, a):
    for s in STUDENTS:
        for part, (score, max_score) in course["scores"]["round1", a, s].items():
            if not part.endswith("-written"):
                assert max_score > 0 and score == max_score, f"{a} {s}: {part} gets {score}/{max_score}"


@pytest.mark.slow
def test_no_honest_submission_logs_a_checksum_warning(course):
    logs = [course["autograde_log"]] + [log for (round_, _, s), log in course["logs"].items() if round_ == "round1"]
    assert logs and not any("checksum" in log for log in logs), [line for log in logs for line in log.splitlines() if "checksum" in line]
    assert not any("not recognized" in log for log in logs)  # no config option that nbgrader does not know
    # a real change still alarms: s001 handed in s002's notebook, whose seed cell is not the one s001 was given
    alarm = course["logs"]["round2", "ch01", "s001"]
    assert "Attribute 'checksum' for cell ch01-seed has changed" in alarm


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_someone_elses_answers_get_zero_on_the_seeded_parts(course, a):
    for s in STUDENTS if a in WHOLE_NOTEBOOK_SWAP else ["s002"]:
        scores = course["scores"]["round2", a, s]
        seeded = SEEDED_TESTS & set(scores)
        assert seeded, f"{a} has no part that depends on the seed"
        for part, (score, max_score) in scores.items():
            if part in seeded:
                assert score == 0, f"{a}: {s} handing in the other's answers gets {score} on {part}"
            elif not part.endswith("-written"):
                assert score == max_score, f"{a}: {s} loses points on {part}, which does not depend on the seed"


@pytest.mark.slow
@pytest.mark.parametrize("a", WHOLE_NOTEBOOK_SWAP)
def test_an_edited_seed_cell_is_restored_and_graded_with_the_rosters_seed(course, a):
    nb = course["autograded"]["round2", a, "s001"]  # s001 handed in s002's notebook, seed cell and all
    assert seed_cell(nb).source == nbgrader_plugins.seed_cell_source(course["seeds"]["s001", a], "s001")
    tests = [c for c in nb.cells if nbg(c).get("grade") and not nbg(c).get("solution") and c.cell_type == "code"]
    assert tests and all(c.source.startswith(f"seed = {course['seeds']['s001', a]} ") for c in tests)


def _test_cell_text(nb, gid: str) -> str:
    cell = next(c for c in nb.cells if nbg(c).get("grade_id") == gid)
    return " ".join(str(o.get("evalue", "")) + str(o.get("text", "")) for o in cell.outputs)


@pytest.mark.slow
def test_deleted_seed_and_test_cells_are_restored_and_graded(course):
    nb = course["autograded"]["round1", "ch06", "s003"]
    assert seed_cell(nb).source == nbgrader_plugins.seed_cell_source(course["seeds"]["s003", "ch06"], "s003")
    assert [nbg(c).get("grade_id") for c in nb.cells if nbg(c)] == [
        nbg(c).get("grade_id") for c in course["personal"]["ch06", "s003"].cells if nbg(c)
    ]
    score, max_score = course["scores"]["round1", "ch06", "s003"]["ch06-ex1-test"]
    assert max_score > 0 and score == max_score  # graded (with s003's own numbers), not left for manual grading
    assert "ch06-ex1-test was deleted from the submission of s003; restored it" in course["autograde_log"]


@pytest.mark.slow
def test_a_replaced_np_allclose_and_a_silenced_check_score_zero(course):
    """np.allclose, the visible check and the in-kernel judge replaced: the kernel cannot hand in a right answer."""
    score, max_score = course["scores"]["round1", "ch14", "s003"]["ch14-ex1-test"]
    assert max_score > 0 and score == 0
    text = _test_cell_text(course["autograded"]["round1", "ch14", "s003"], "ch14-ex1-test")
    assert "graded outside the notebook: " in text  # the grader's verdict, whatever the kernel said


@pytest.mark.slow
@pytest.mark.parametrize(("a", "gid", "name"), [("ch14", "ch14-ex2-test", "softmax_backward")])
def test_attnlibs_own_function_scores_zero_and_says_why(course, a, gid, name):
    """``softmax_backward = backward.softmax_backward``: the grader's run of the answer cells has no attnlib."""
    score, max_score = course["scores"]["round1", a, "s003"][gid]
    assert max_score > 0 and score == 0
    graded = _test_cell_text(course["autograded"]["round1", a, "s003"], gid).split("graded outside the notebook: ")[1]
    assert graded.startswith(f"{name} is not defined as a function by your answer cells (your answer cell ch14-ex2-answer stopped: ")
    assert "NameError: name 'backward' is not defined" in graded and "neither attnlib nor" in graded, graded


@pytest.mark.slow
@pytest.mark.parametrize(("a", "gid"), KERNEL_ATTACKS)
def test_what_the_kernel_hands_in_is_not_trusted(course, a, gid):
    """Issue 46: each attack made the kernel hand in a right answer (the old verdict: full marks); judged from what
    the student wrote, the item scores 0 and says why. The function attacks are now refused by the kernel's own
    self-check too (what the grader's runner cannot run is "not yet" in the notebook), in the runner's words."""
    nb = course["autograded"]["round1", a, "s003"]
    cell = next(c for c in nb.cells if nbg(c).get("grade_id") == gid)
    kernel = [o for o in cell.outputs if not (o.get("output_type") == "error" and o.get("ename") == "NotRight")]
    entry = grading.exercise_of_test(gid)
    handed = grading.judge_outputs(entry.number, course["seeds"]["s003", a], kernel)
    if gid in KERNEL_SEES:
        said = "\n".join(str(o.get("evalue", "")) for o in kernel if o.get("output_type") == "error")
        assert KERNEL_SEES[gid] in said and handed and handed[0].startswith(KERNEL_SEES[gid]), (said, handed)
    else:
        assert not any(o.get("output_type") == "error" for o in kernel), kernel  # the kernel saw nothing wrong
        assert handed == []  # its hand-in was right
    score, max_score = course["scores"]["round1", a, "s003"][gid]
    assert max_score > 0 and score == 0, (gid, score)
    text = _test_cell_text(nb, gid)
    assert "graded outside the notebook: " in text, text
    said = text.split("graded outside the notebook: ")[1]
    assert KERNEL_ATTACK_REASONS[gid] in said, said


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gid", "reason"),
    [
        # 9.1 typed with a boolean is judged by the same comparator in tests/exercises/test_one_comparator.py; here
        # s003's 9.1 stays right, to show that the exit after it (issue 46) costs it nothing
        ("ch09-ex3-test", "the result is a numpy.ma masked array; return a plain array"),
    ],
)
def test_the_grader_refuses_what_the_self_check_refuses_for_the_same_reason(course, gid, reason):
    """Issue 49: before, the hand-in accepted these and the judge gave 0 with a reason that was not true."""
    score, max_score = course["scores"]["round1", "ch09", "s003"][gid]
    assert max_score > 0 and score == 0
    text = _test_cell_text(course["autograded"]["round1", "ch09", "s003"], gid)
    said, _, graded = text.partition("graded outside the notebook: ")
    assert reason in said and reason in graded, text  # the self-check's report, then the grader's verdict


@pytest.mark.slow
def test_feedback_shows_neither_hidden_tests_nor_their_lines_and_warns_of_no_config(course):
    text = html.unescape(re.sub(r"<[^>]+>", "", course["feedback"]))  # the text a student reads
    assert "Exercise 9.1" in text and "masked_row" in text
    assert "HIDDEN TESTS" not in text
    for code in make_assignments.hidden_tests("ch09").values():
        for line in code.splitlines():
            if line.strip():
                assert line.strip() not in text, f"feedback quotes the hidden test line {line.strip()!r}"
    assert "not recognized" not in course["feedback_log"], course["feedback_log"]


def _export(course, name: str) -> list[list[str]]:
    with open(course["root"] / name, newline="") as fh:
        return list(csv.reader(fh))


@pytest.mark.slow
def test_lms_export_holds_the_graded_points_after_penalties_for_the_roster_only(course):
    rows = _export(course, "lms_grades.csv")
    header, points, students = rows[0], rows[1], rows[2:]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert header[5:] == CHAPTERS  # the course's order, although ch06 has a due date (nbgrader sorts it last)
    assert points[0] == "Points Possible"
    assert [r[2] for r in students] == ROSTER  # the roster's students, in its order; not the exchange's stray user
    assert f"Not on the roster {course['root'] / 'roster.csv'}, so not exported: {course['os_user']}" in course["export"]
    col = {a: 5 + k for k, a in enumerate(CHAPTERS)}
    for row in students:
        if row[2] == "s003":
            continue
        assert row[0] in ("Lovelace, Ada", "Turing, Alan") and row[3] == row[2]
        for a in CHAPTERS:
            last = "round2" if (a in WHOLE_NOTEBOOK_SWAP or row[2] == "s002") else "round1"
            want = sum(score or 0 for score, _ in course["scores"][last, a, row[2]].values())
            assert float(row[col[a]]) == want, f"{row[2]} {a}: exported {row[col[a]]}, graded {want}"
    s003 = students[2]
    raw = sum(score or 0 for score, _ in course["scores"]["round1", "ch06", "s003"].values())
    assert raw > 0 and s003[col["ch06"]] == "0"  # handed in late under the zero penalty
    assert s003[col["ch01"]] == "0"  # an unreadable file, graded as unanswered
    assert s003[col["ch09"]] == ""  # its written answer is not graded yet
    assert "Hand-graded parts not graded yet" in course["export"] and "s003 ch09" in course["export"]
    moodle = _export(course, "moodle_grades.csv")
    assert moodle[0] == header and moodle[1:] == students  # the same, without the Points Possible row


@pytest.mark.slow
def test_seeds_table_lists_the_files_seeds(course):
    lines = [line for line in course["seeds_table"].splitlines() if re.fullmatch(r"(id|s\d+),(seed|\d+)", line)]
    assert lines == ["id,seed"] + [f"{s},{course['seeds'][s, 'ch06']}" for s in ROSTER]


@pytest.mark.slow
def test_exchange_copy_computes_each_users_own_seed_and_reveals_one_key(course, monkeypatch):
    """The exchange copy's seed cell gives each user their seed, with nbgrader's own user name."""
    from nbgrader import utils

    path = course["root"] / "release" / "ch09" / "ch09.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = seed_cell(nb)
    assert nbg(cell)["checksum"] == utils.compute_checksum(cell)  # students' `nbgrader validate` stays quiet
    IpcExecute.started.clear()
    assert ipc_validator().validate(str(path)).get("changed") is None
    assert [k["transport"] for k in IpcExecute.started] == ["ipc"]  # its kernel over ipc, as the graders'
    text = "".join(c.source for c in nb.cells)
    assert course["keys"]["ch09"] in text and FIXED_SECRET not in text
    assert not any(course["keys"][a] in text for a in CHAPTERS if a != "ch09")
    assert variants.route_key(FIXED_SECRET, "ch09", "files") not in text
    for user in STUDENTS:
        monkeypatch.setattr(utils, "get_osusername", lambda user=user: user)  # the account nbgrader files under
        ns: dict = {}
        exec(cell.source, ns)
        assert ns["seed"] == course["seeds"][user, "ch09"]


def test_the_notebook_and_nbgrader_agree_on_the_user_name(monkeypatch):
    """USER and LOGNAME say s101, the account is another: the numbers must be those of the account nbgrader files under."""
    import getpass

    from nbgrader import utils

    monkeypatch.setenv("LOGNAME", "s101")
    monkeypatch.setenv("USER", "s101")
    assert getpass.getuser() == "s101"  # what attnlib used to ask
    assert variants.current_user() == utils.get_username() != "s101"
    monkeypatch.setattr(utils, "get_osusername", lambda: "jovyan")  # JupyterHub's standard containers
    monkeypatch.setenv("JUPYTERHUB_USER", "s102")
    assert variants.current_user() == utils.get_username() == "s102"


@pytest.mark.slow
def test_similarity_report_shows_the_copied_pair_side_by_side(course):
    report = course["similar"]
    assert "s001 and s002: mean similarity" in report
    assert "-- ch06-ex2-answer (similarity 1.00): s001 | s002" in report
    assert re.search(r"def attention_head\(X, W_Q, W_K, W_V\): +\| def attention_head", report)
    assert course["os_user"] not in report  # an unanswered notebook is never similar to anything


def _cell_after(nb, gid: str):
    at = next(k for k, c in enumerate(nb.cells) if nbg(c).get("grade_id") == gid)
    return nb.cells[at + 1]


def _outputs_text(cell) -> str:
    return "".join(str(o.get("text", "")) + str(o.get("evalue", "")) for o in cell.outputs)


@pytest.mark.slow
def test_the_sandbox_keeps_students_code_away_from_the_course_the_clone_and_the_network(course):
    """s003's added cell in chapter 9 tries, from the kernel `nbgrader autograde ch09` started, everything listed."""
    nb = course["autograded"]["round1", "ch09", "s003"]
    printed = _outputs_text(_cell_after(nb, "ch09-ex1-test"))
    tried = ("secret", "gradebook", "other-submission", "course-folder", "exchange", "hidden-tests")
    tried += ("write-course", "write-clone", "write-tmp", "network")
    for what in tried:
        assert f"BLOCKED {what} " in printed, f"the sandbox let s003's cell do {what}: {printed[:2000]}"
    assert "DONE write-scratch 4" in printed  # its own scratch folder is writable
    root = course["root"]
    assert not (root / "planted.txt").exists() and not Path("/tmp/planted-by-s003").exists()
    assert course["git_after"] == course["git_before"]  # the clone (attnlib, the grader's code) unchanged
    for folder in ("autograded", "feedback"):
        for path in (root / folder).rglob("*"):
            if path.is_file():
                assert FIXED_SECRET not in path.read_text(errors="replace"), f"{path} holds the course secret"


@pytest.mark.slow
def test_a_cell_that_stops_the_kernel_costs_only_what_it_touches(course):
    """os._exit(0) after 9.1's test: 9.1 keeps its points, 9.3 after it is judged (0: an np.ma array, with the
    self-check's reason), 9.2 (attnlib's own, the registry patched) still 0."""
    scores = course["scores"]["round1", "ch09", "s003"]
    assert scores["ch09-ex1-test"] == (1, 1) and scores["ch09-ex3-test"] == (0, 3) and scores["ch09-ex2-test"] == (0, 2)
    judged = _test_cell_text(course["autograded"]["round1", "ch09", "s003"], "ch09-ex3-test")
    assert "graded outside the notebook: " in judged and "numpy.ma masked array" in judged
    nb = course["autograded"]["round1", "ch09", "s003"]
    exit_cell = nb.cells[nb.cells.index(_cell_after(nb, "ch09-ex1-test")) + 1]
    assert "KernelStopped" in str(exit_cell.outputs) and "the kernel stopped" in _outputs_text(exit_cell)
    log = course["autograde_log"]
    assert "s003/ch09: cell 2 after ch09-ex1-test: the kernel stopped (an exit, a crash or a resource limit)" in log
    assert "s003/ch09: the cell after ch09-ex1-test" not in log  # the spy cell before it ran to its end
    assert "Cells that stopped the grader's kernel" in course["export"] and "s003 ch09 (cell 2 after ch09-ex1-test)" in course["export"]


@pytest.mark.slow
def test_a_loop_that_swallows_the_interrupt_costs_only_what_it_touches_and_is_not_retried(course):
    scores = course["scores"]["round1", "ch15", "s003"]
    attacked = {gid for a, gid in KERNEL_ATTACKS if a == "ch15"}  # 0 by test_what_the_kernel_hands_in_is_not_trusted
    assert all(score == max_score for part, (score, max_score) in scores.items() if part.endswith("-test") and part not in attacked)
    assert scores["ch15-ex1-test"][0] > 0, scores
    nb = course["autograded"]["round1", "ch15", "s003"]
    assert f"ran past the time limit of {SHORT_TIMEOUT} s" in _outputs_text(_cell_after(nb, "ch15-ex1-test"))
    assert course["loop_seconds"] < 4 * SHORT_TIMEOUT + 60, course["loop_seconds"]
    seconds, log, code = course["loop_again"]
    assert code == 0 and f"Skipping existing assignment: {course['root'] / 'autograded' / 's003' / 'ch15'}" in log, log
    # not retried, whatever the machine's load: nbgrader converts no notebook of s003's chapter 15 again
    converted = [line for line in log.splitlines() if "Converting notebook" in line]
    assert not [line for line in converted if "/s003/ch15/" in line], (seconds, log)
    assert "s003 ch15 (the cell after ch15-ex1-test)" in course["export"]


@pytest.mark.slow
def test_a_200_mb_print_is_cut_to_the_character_limit(course):
    root = course["root"]
    for path in (root / "autograded" / "s003" / "ch09" / "ch09.ipynb", root / "feedback" / "s003" / "ch09" / "ch09.html"):
        assert path.stat().st_size < 1_000_000, f"{path} is {path.stat().st_size} bytes"
    printed = _outputs_text(_cell_after(course["autograded"]["round1", "ch09", "s003"], "ch09-ex1-test"))
    assert "[output cut: " in printed and "characters beyond the limit of 200000]" in printed
    honest = [log for (round_, _, s), log in course["logs"].items() if s in STUDENTS]
    assert honest and not any("Cut " in log or "KernelStopped" in log or "stopped the kernel" in log for log in honest)


@pytest.mark.slow
def test_the_pages_sandbox_check_reports_every_attempt_refused(course):
    report = course["sandbox"]
    tool = _course_module()
    for what, _ in tool.SANDBOX_TRIES:
        assert f"refused: {what} (" in report, report
    assert "ALLOWED" not in report and "The grading sandbox works." in report
    assert str(course["root"]) in report.split("hidden from students' code: ")[1].splitlines()[0]
    assert not (course["root"] / "sandbox-probe.txt").exists() and not (ROOT / "attnlib" / "sandbox-probe.txt").exists()


@pytest.mark.slow
def test_an_unreadable_submission_costs_that_submission_only_and_is_named(course):
    root = course["root"]
    assert (root / "submitted" / "s003" / "ch01" / "ch01.ipynb.unreadable").read_text().startswith("{")  # the file as handed in
    scores = course["scores"]["round1", "ch01", "s003"]
    assert scores and all((score or 0) == 0 for score, _ in scores.values()), scores
    nb = course["autograded"]["round1", "ch01", "s003"]
    assert nb.cells[0].source.startswith("**The submitted file ch01.ipynb could not be read** (")
    assert "s003 ch01 (ch01.ipynb could not be read, graded as unanswered)" in course["export"]
    for s in STUDENTS:  # graded as before
        graded = course["scores"]["round1", "ch01", s]
        assert all(score == max_score for part, (score, max_score) in graded.items() if not part.endswith("-written"))


@pytest.mark.slow
def test_release_feedback_releases_the_exchanges_submissions_and_names_the_one_placed_by_hand(course):
    """Issue 49: nbgrader's release_feedback stopped (exit 1) at s003's chapter 9, placed with course.py place."""
    from nbgrader.utils import notebook_hash

    root = course["root"]
    log = course["feedback_log"]
    assert "Not released, because these submissions did not come through the exchange" in log, log
    assert f"{root / 'feedback' / 's003' / 'ch09' / 'ch09.html'} (no submission_secret.txt)" in log
    released = root / "exchange" / "deriving-attention" / "feedback"
    for s in [*STUDENTS, course["os_user"]]:
        secret = (root / "submitted" / s / "ch09" / "submission_secret.txt").read_text()
        assert (released / f"{notebook_hash(secret=secret, notebook_id='ch09')}.html").exists(), s
    assert len(list(released.glob("*.html"))) == len(STUDENTS) + 1  # nothing for s003
    fetched = list((course["desk"] / "ch09" / "feedback").rglob("ch09.html"))
    assert len(fetched) == 1  # the exchange's own student fetched their feedback


@pytest.mark.slow
def test_a_regrade_keeps_the_hand_grades_of_unchanged_answers_and_names_the_rest(course):
    """Issue 49: `nbgrader autograde --force` marked every hand-graded part as not graded, and the export left it out."""
    log = course["regrade_log"]
    after = course["hand_grades_after_regrade"]
    assert after["ch06", "s003", "ch06-ex3-written"] == (None, 1, False)  # s003 handed in nothing new: kept
    assert "kept the hand grade of s003 ch06 ch06-ex3-written: 1 point" in log
    assert after["ch06", "s001", "ch06-ex3-written"][2] is True  # s001 handed in another notebook: to grade again
    assert "grade again in the Formgrader: s001 ch06 ch06-ex3-written: the answer is not the one graded by hand" in log
    assert "1 hand-graded part(s) need grading again" in log


@pytest.mark.slow
def test_a_late_submission_exports_the_configured_penalty_even_with_points_given_by_hand_afterwards(course):
    """Issue 49: under "zero", s003's late chapter 14 exported the points of its written answer, graded after autograde."""
    col = {a: 5 + k for k, a in enumerate(CHAPTERS)}
    zero = {r[2]: r for r in _export(course, "lms_grades.csv")[2:]}
    none = {r[2]: r for r in _export(course, "no_penalty.csv")[2:]}
    ch14 = course["scores"]["round1", "ch14", "s003"]
    assert sum(score or 0 for score, _ in ch14.values()) == 0 and zero["s003"][col["ch14"]] == "0"
    assert none["s003"][col["ch14"]] == "1"  # the point given by hand, with no penalty
    raw06 = sum(score or 0 for score, _ in course["scores"]["round1", "ch06", "s003"].values())
    assert zero["s003"][col["ch06"]] == "0" and float(none["s003"][col["ch06"]]) == raw06 + 1
    for s in STUDENTS:  # on time: the same under both
        assert zero[s] == none[s]


@pytest.mark.slow
def test_the_similarity_report_finds_no_model_answer_among_attnlibs_functions(course):
    assert "ch06: 0 submitted function(s) matching attnlib's own source" in course["similar"], course["similar"]
