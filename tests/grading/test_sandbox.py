"""The grading sandbox's parts on their own: its command, its errors, its kernels over ipc, the output cap.

The attacks through a real ``nbgrader autograde`` are in ``test_per_student.py`` (s003's chapter 9 and 15
submissions) and the honest submissions of every chapter in ``test_nbgrader.py``, both in the sandbox.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader import utils
from support.grading import nbgrader_plugins as plugins

from attnlib.exercises import grading

LIMITS = {"cpu": 60, "as": 4 << 30, "nproc": 64, "fsize": 1 << 20, "nofile": 256, "core": 0}


def test_the_command_hides_the_course_and_drops_every_privilege(tmp_path):
    course = Path(plugins.__file__).resolve().parent.parent / "some-course-inside-the-clone"
    cmd = plugins.sandbox_command(["python", "-c", "pass"], tmp_path, [course], LIMITS, uid=1 << 20)
    assert Path(cmd[0]).name == "prlimit" and "--cpu=60" in cmd and "--nproc=64" in cmd
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--clearenv"):
        assert flag in cmd
    assert cmd[cmd.index("--tmpfs") + 1] == str(course)  # inside a shown folder (the clone): covered by an empty one
    assert cmd.index("--tmpfs") > max(k for k, a in enumerate(cmd) if a == "--ro-bind")  # and after it, so on top
    assert cmd[cmd.index("--bind") + 1 : cmd.index("--bind") + 3] == [str(tmp_path)] * 2  # the only writable folder
    start = cmd.index("--reuid=1048576")
    assert Path(cmd[start - 1]).name == "setpriv" and "--no-new-privs" in cmd[start:] and "--bounding-set=-all" in cmd[start:]
    assert cmd[-3:] == ["python", "-c", "pass"]


@pytest.mark.parametrize(
    ("kernel_dir", "hidden", "limits", "message"),
    [
        ("relative", [], LIMITS, "must be absolute paths"),
        ("/tmp/k", ["course"], LIMITS, "must be absolute paths"),
        ("/tmp/k", [], {"cpu": -1}, "limit cpu must be a non-negative integer"),
    ],
)
def test_bad_arguments_are_named(kernel_dir, hidden, limits, message):
    with pytest.raises(ValueError, match=message):
        plugins.sandbox_command(["python"], Path(kernel_dir), [Path(h) for h in hidden], limits)


def test_without_bubblewrap_grading_stops_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "bwrap" else f"/usr/bin/{tool}")
    with pytest.raises(plugins.SandboxUnavailable) as info:
        plugins.sandbox_command(["python"], tmp_path, [], LIMITS, uid=None)
    text = str(info.value)
    assert "bwrap (Debian/Ubuntu package bubblewrap)" in text and "c.SandboxExecute.sandbox = False" in text


@pytest.mark.slow
def test_kernels_started_together_use_their_own_ipc_sockets_and_never_collide():
    """Eight sandboxed kernels at once (TCP kernels picked free ports, then raced to bind them)."""

    async def one() -> tuple[str, str, str]:
        km = plugins.SandboxedKernelManager(kernel_name="python3")
        km.hidden, km.limits = [], LIMITS
        await km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=120)
            msg_id = kc.execute("import os; print(os.getuid(), os.getcwd())")
            printed = ""
            while True:
                msg = await kc.get_iopub_msg(timeout=60)
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                    printed += msg["content"]["text"]
                if msg["parent_header"].get("msg_id") == msg_id and msg["content"].get("execution_state") == "idle":
                    break
            return km.transport, km.ip, printed
        finally:
            kc.stop_channels()
            folder = km.kernel_dir
            await km.shutdown_kernel(now=True)
            assert not folder.exists()  # the kernel's folder (sockets, scratch) goes with it

    async def many():
        return await asyncio.gather(*(one() for _ in range(8)))

    results = asyncio.run(many())
    assert {transport for transport, _, _ in results} == {"ipc"}
    assert len({ip for _, ip, _ in results}) == 8
    for _, ip, printed in results:
        uid, cwd = printed.split()
        assert cwd == str(Path(ip).parent / "work")
        assert int(uid) >= 1 << 20 if plugins.os.geteuid() == 0 else int(uid) == plugins.os.geteuid()


def _graded(outputs: list) -> tuple:
    cell = nbformat.v4.new_code_cell("x", metadata={"nbgrader": {"grade": True, "points": 2, "grade_id": "t", "solution": False}})
    cell.outputs = outputs
    return utils.determine_grade(cell), cell


@pytest.mark.parametrize(
    "outputs",
    [
        [nbformat.v4.new_output("stream", name="stdout", text="x" * 1_000_000)],
        [
            nbformat.v4.new_output("stream", name="stdout", text="x" * 1_000_000),
            nbformat.v4.new_output("error", ename="NotRight", evalue="y" * 500_000, traceback=["z" * 500_000]),
        ],
        [
            nbformat.v4.new_output("display_data", data={"text/plain": "p" * 300_000}),
            nbformat.v4.new_output("stream", name="stderr", text="w" * 300_000),
            nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1),
        ],
    ],
)
def test_output_is_cut_to_the_character_limit_without_changing_the_points(outputs):
    before, cell = _graded(outputs)
    plugins.LimitOutputCharacters(max_characters=10_000).preprocess_cell(cell, {}, 0)
    after, _ = _graded(cell.outputs)
    assert after == before
    assert len(nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))) < 20_000
    assert "characters beyond the limit of 10000]" in cell.outputs[-1]["text"]


def test_the_graders_verdict_is_kept_whole_after_a_long_hand_in_and_error():
    """Found by the answer table's autograde (test_nbgrader.py): 11.2's hand-in of the grader's calls is 350,000
    characters, so the kernel's error and then the grader's verdict were cut to 200 characters, losing reasons."""
    error = "AssertionError: " + "a" * 2000  # the kernel's hand-in raised it
    verdict = "graded outside the notebook: " + "; ".join(f"case {k}: the shape is right but some values are wrong" for k in range(20))
    outputs = [
        nbformat.v4.new_output("display_data", data={grading.HAND_IN_MIME: {"payload": "h" * 350_000}, "text/plain": "handed in"}),
        nbformat.v4.new_output("error", ename="AssertionError", evalue="a" * 2000, traceback=["t" * 300_000, error]),
        nbformat.v4.new_output("error", ename="NotRight", evalue=verdict, traceback=[]),
    ]
    before, cell = _graded(outputs)
    plugins.LimitOutputCharacters().preprocess_cell(cell, {}, 0)
    assert _graded(cell.outputs)[0] == before
    kernels, graders = [o for o in cell.outputs if o["output_type"] == "error"]  # in their order
    assert graders == nbformat.v4.new_output("error", ename="NotRight", evalue=verdict, traceback=[])
    assert kernels["evalue"] == "a" * 2000 and kernels["traceback"] == [error]
    assert "characters beyond the limit of 200000]" in cell.outputs[-1]["text"]
    assert len(nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))) < 210_000


def test_a_cell_within_the_limit_is_left_alone():
    out = [nbformat.v4.new_output("stream", name="stdout", text="fine\n")]
    _, cell = _graded(out)
    plugins.LimitOutputCharacters(max_characters=10_000).preprocess_cell(cell, {}, 0)
    assert cell.outputs == out


def test_a_stopped_cell_is_named_where_it_stands():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("a", metadata={"nbgrader": {"grade_id": "ch09-ex1-test"}}),
            nbformat.v4.new_code_cell("spy"),
            nbformat.v4.new_code_cell("import os; os._exit(0)"),
        ]
    )
    assert [plugins.cell_name(nb, k) for k in range(3)] == ["ch09-ex1-test", "the cell after ch09-ex1-test", "cell 2 after ch09-ex1-test"]
    nb.cells[2].outputs = [nbformat.v4.new_output("error", ename="KernelStopped", evalue="the kernel stopped", traceback=[])]
    assert plugins.stopped_cells(nb) == ["cell 2 after ch09-ex1-test"]


# ---- issue 46: the scratch folder capped in all, and a grader who is not root ----

#: Writes 1 MiB files into the current folder (the scratch) until the system refuses; ``stopped`` says errno and count.
FILL = """written = 0
try:
    while written < 1000:
        with open(f"fill{written}", "wb") as f:
            f.write(b"x" * (1 << 20))
        written += 1
    stopped = f"none {written}"
except OSError as exc:
    stopped = f"{exc.errno} {written}"
"""
#: 8 MiB of scratch in all, each file up to 16 MiB: the total is what stops the writing.
SMALL_SCRATCH = {**LIMITS, "fsize": 16 << 20, "scratch": 8 << 20}


def _stopped_after(said: str) -> int:
    errno, written = said.split()
    assert errno == "28", said  # ENOSPC: No space left on device
    return int(written)


def test_the_scratch_folder_is_capped_in_all_for_a_kernel(tmp_path):
    folder = plugins.make_kernel_dir(plugins.sandbox_uid())
    try:
        cmd = plugins.sandbox_command([sys.executable, "-c", FILL + "print(stopped)"], folder, [], SMALL_SCRATCH, plugins.sandbox_uid())
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert 4 <= _stopped_after(done.stdout.strip()) <= 8, done.stdout  # 8 files of 1 MiB at most, then ENOSPC
    assert "--size" in cmd and cmd[cmd.index("--size") + 1] == str(8 << 20)


def test_writing_past_the_scratch_cap_costs_only_that_cell_in_the_graders_runner():
    """The runner's scratch is capped too: a cell that fills it fails there (ENOSPC), and 9.2 after it is graded."""
    hidden = [Path(tempfile.mkdtemp(prefix="course-"))]
    right = "def my_causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))\n"
    fill_then_raise = FILL + "raise OSError(stopped)\n"
    cells = [("ch09-ex1-answer", fill_then_raise), ("ch09-ex2-answer", right)]
    request, arrays = grading.runner_request("9.2", 3, cells)
    results = plugins.run_answers(request, arrays, hidden, SMALL_SCRATCH, True, 60)
    said = results["cells"]["ch09-ex1-answer"]
    assert said.startswith("OSError: 28 ") and 4 <= _stopped_after(said.split(" at line")[0][len("OSError: ") :]) <= 8, said
    assert grading.judge_results("9.2", 3, results, "ch09-ex2-answer") == []  # the grading goes on: full marks for 9.2


#: Run as a fresh user id that is not root: the sandbox probe, then 9.2's right answer through the grader's runner.
AS_A_USER = """import os, sys
sys.path[:0] = [{instructor!r}, {root!r}]
import nbgrader_plugins as plugins
from pathlib import Path
from attnlib.exercises import grading
assert os.geteuid() == {uid} and plugins.sandbox_uid() is None  # the user-namespace path: no setpriv
try:
    plugins.probe_sandbox([Path({hidden!r})], {limits!r})
except plugins.SandboxUnavailable as exc:
    print("UNAVAILABLE", exc)
    raise SystemExit(0)
request, arrays = grading.runner_request("9.2", 3, [("ch09-ex2-answer", {right!r})])
results = plugins.run_answers(request, arrays, [Path({hidden!r})], {limits!r}, True, 60)
print("JUDGED", grading.judge_results("9.2", 3, results, "ch09-ex2-answer"))
"""


def _as_a_user(tmp_path, wrap: list[str] = ()) -> str:
    uid = 54321 + os.getpid() % 1000  # a user id that owns nothing here
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chown(home, uid, uid)
    code = AS_A_USER.format(
        instructor=str(Path(plugins.__file__).parent), root=str(Path(plugins.__file__).parent.parent), uid=uid, hidden=str(tmp_path),
        limits=LIMITS, right="def my_causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))\n",
    )
    user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "env", f"HOME={home}", "TMPDIR=/tmp"]
    done = subprocess.run([*wrap, *user, sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=home)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="run as a user other than root, every sandboxed test here takes this path already")
def test_a_grader_who_is_not_root_gets_the_sandbox_through_user_namespaces(tmp_path):
    said = _as_a_user(tmp_path)
    assert said.strip() == "JUDGED []", said


@pytest.mark.skipif(os.geteuid() != 0, reason="making a user namespace that allows no further one needs root here")
def test_without_user_namespaces_a_grader_who_is_not_root_is_told_what_to_enable(tmp_path):
    """A user namespace whose user.max_user_namespaces is 0 (as on a server that turned them off): the probe's error
    says what to enable, or to grade as root, or to opt out; nothing is graded outside the sandbox silently."""
    holder = subprocess.Popen(["unshare", "--user", "sleep", "300"])
    try:
        time.sleep(0.3)
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{holder.pid}/{name}").write_text("0 0 65536\n")
        turn_off = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
        off = ["nsenter", f"--user=/proc/{holder.pid}/ns/user", "--", "sh", "-c", turn_off, "sh"]
        said = _as_a_user(tmp_path, off)
    finally:
        holder.kill()
        holder.wait()
    assert said.startswith("UNAVAILABLE Python does not start in the grading sandbox"), said
    assert "max_user_namespaces" in said and "user.max_user_namespaces" in said, said
    for needed in (plugins.NAMESPACES_NEEDED.strip(), "c.SandboxExecute.sandbox = False"):
        assert needed in said, said


def test_instructors_md_states_the_sandboxs_limits_as_the_plugin_sets_them():
    """The page's numbers are the plugin's defaults (its limits and the scratch cap), not typed separately."""
    text = " ".join((Path(plugins.__file__).resolve().parent.parent / "instructors.md").read_text().split())
    execute = plugins.SandboxExecute()
    limits = execute.limits()
    stated = [
        f"to {limits['cpu']} seconds of CPU time, {limits['as'] >> 30} GiB of memory, {limits['nproc']} processes and threads",
        f"files of {limits['fsize'] >> 20} MiB each",
        f"a fresh tmpfs (memory) of {limits['scratch'] >> 20} MiB in all (`c.SandboxExecute.scratch_bytes`)",
        f"to the scratch folder's {plugins.SCRATCH_BYTES >> 20} MiB in all",
    ]
    for words in stated:
        assert words in text, words
    assert limits["scratch"] == plugins.SCRATCH_BYTES
