"""The instructor side as the tests see it: the assignment builder, nbgrader cell metadata,
the chapters' model answers, and running an assignment's graded cells in process."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path

from nbclient.util import run_sync
from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, Execute
from nbgrader.validator import Validator

from attnlib import variants
from attnlib.exercises import grading
from support.paths import INSTRUCTOR


def _load(name: str):
    """``instructor/<name>.py`` as a module (the instructor folder is not a package), importable by that name."""
    spec = importlib.util.spec_from_file_location(name, INSTRUCTOR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


#: ``instructor/make_assignments.py`` and ``instructor/nbgrader_plugins.py``, loaded as modules
make_assignments = _load("make_assignments")
nbgrader_plugins = _load("nbgrader_plugins")

#: the chapters with exercises, and their nbgrader assignment names (ch01, ...)
ASSIGNMENT_CHAPTERS = make_assignments.chapter_files()
NAMES = [make_assignments.assignment_name(c) for c in ASSIGNMENT_CHAPTERS]
SOLUTION_RE = re.compile(r"[ \t]*### BEGIN SOLUTION\n(.*?)[ \t]*### END SOLUTION\n?", re.S)
#: answer cell grade id -> its by-hand exercise
BY_HAND = {e.test_id.replace("-test", "-answer"): e for e in variants.EXERCISES.values() if e.kind == "by-hand"}
#: answer cell grade id -> its exercise whose model answer attnlib computes (by-hand and measured)
TYPED = {e.test_id.replace("-test", "-answer"): e for e in variants.EXERCISES.values() if e.answer is not None}


def nbg(cell) -> dict:
    """A cell's nbgrader metadata ({} for a cell nbgrader does not know)."""
    return cell.metadata.get("nbgrader", {})


def source_notebook(name: str):
    """The nbgrader source notebook of assignment ``name``, as ``make_assignments`` builds it."""
    return make_assignments.assignment_notebook(ASSIGNMENT_CHAPTERS[NAMES.index(name)])


def model_answer(cell, seed: int | None) -> str:
    """The answer cell's code: attnlib's answers for a by-hand exercise, else the chapter's solution."""
    if seed is not None and nbg(cell)["grade_id"] in TYPED:
        got = variants.answers(TYPED[nbg(cell)["grade_id"]].draw(seed))
        return "\n".join(f"{k} = {v!r}" for k, v in got.items())
    return SOLUTION_RE.sub(lambda m: m.group(1), cell.source)


def run_assignment(nb, seed: int | None, answers_of: int | None = None, answers: dict[str, str] | None = None) -> dict[str, str]:
    """Run the graded cells of ``nb`` for ``seed``; grade id of each test cell -> "" or the error.

    As the grader does: the hidden tests hand in, and what they hand in is judged outside the
    cells' namespace (``attnlib.exercises.grading.judge``), with the grader's ``seed``.
    ``answers_of``: answer with the model answers of another seed (a copied homework).
    ``answers``: answer cell grade id -> code to run instead of the model answer (an attack).
    """
    ns: dict = {}
    results = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            meta = nbg(cell)
            if cell.cell_type != "code" or not meta:
                continue  # explorers and markdown
            code = model_answer(cell, seed if answers_of is None else answers_of) if meta.get("solution") else cell.source
            if answers and meta["grade_id"] in answers:
                code = answers[meta["grade_id"]]
            if meta.get("grade_id", "").endswith("-seed"):
                code = f"seed = {seed!r}"
            elif meta.get("grade") and not meta.get("solution"):
                code = f"seed = {seed!r}\n{code}"  # the grader's line at the top of each test cell
            with grading.collected() as handed:
                try:
                    exec(compile(code, meta["grade_id"], "exec"), ns)
                except Exception as exc:  # a failing test is reported per grade id below
                    if not meta.get("grade"):
                        raise
                    results[meta["grade_id"]] = f"{type(exc).__name__}: {exc}"
                    continue
            if meta.get("grade"):
                entry = grading.exercise_of_test(meta["grade_id"])
                failures = [] if entry is None else _judged(entry.number, seed, handed)
                results[meta["grade_id"]] = "; ".join(failures)
    return results


def _judged(exercise: str, seed: int | None, handed: list[dict]) -> list[str]:
    """The grader's verdict on what one test cell handed in (outputs as nbgrader stores them)."""
    outputs = [{"output_type": "display_data", "data": {grading.HAND_IN_MIME: h}} for h in handed]
    return grading.judge_outputs(exercise, seed, outputs)


def kernel_facts(km) -> dict:
    """A started kernel's transport, its ``ip`` (for ipc: the sockets' path prefix) and whether its sockets are files."""
    info = km.get_connection_info()
    ports = [info[k] for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
    return {"transport": info["transport"], "ip": info["ip"], "socket_files": all(Path(f"{info['ip']}-{p}").is_socket() for p in ports)}


class IpcExecute(Execute):
    """nbgrader's ``Execute`` with the grading kernels' transport: ipc sockets in a fresh folder per kernel.

    The kernel manager is ``nbgrader_plugins.SandboxedKernelManager`` without the sandbox (validation
    runs the instructor's own source notebook), so kernels started at once by parallel test workers
    cannot take each other's TCP ports. Every kernel started records its transport, its ``ip`` and
    whether its sockets were files in ``started`` (for the test that it is so).
    """

    started: list[dict] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kernel_manager_class = nbgrader_plugins.SandboxedKernelManager

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.sandboxed = False
        return km

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()  # the kernel answered: its sockets are bound
        IpcExecute.started.append(kernel_facts(self.km))
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # nbclient's synchronous name wraps its own coroutine


def ipc_validator(config=None) -> Validator:
    """nbgrader's ``Validator`` (a source notebook passes its own tests), its kernels over ipc (:class:`IpcExecute`)."""
    validator = Validator(config=config) if config is not None else Validator()
    validator.preprocessors = [CheckCellMetadata, ClearOutput, IpcExecute]
    return validator
