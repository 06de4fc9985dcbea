"""The course server of instructors.md ("A course server"): a real JupyterHub with nbgrader, end to end.

The fixture starts, once for the module, a throwaway PostgreSQL server (``support.postgres``) for the
gradebook, makes a course with chapter 1 released through the exchange to a roster of two, and runs the
page's block that starts JupyterHub with ``instructor/hub/jupyterhub_config.py`` (configurable-http-proxy
from ``npm ci``; everything on 127.0.0.1, on free ports picked here). Then, through the hub's REST API
and each student's own server (nbgrader's assignment list extension and Jupyter's contents API), as a
student's browser would: both students log in with the trial password, get an API token, start their
servers, fetch ch01 and write into it (s001 the model answers of their own numbers, s002 one answer),
and submit. The instructor runs the page's grading block (collect, ``course.py autograde --workers 2``
into PostgreSQL through the grading sandbox, feedback generated and released), reads the gradebook
through the formgrader service (a student is turned away from it), and each student fetches their
feedback and reads their score in it. Nothing is mocked; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from support.grading import model_answer, nbg, source_notebook
from support.paths import BIN, INSTRUCTOR, ROOT
from support.postgres import throwaway_server
from test_per_student import RUN_ELSEWHERE, Page

from attnlib import variants

A = "ch01"
COURSE = "deriving-attention"
STUDENTS = ["s001", "s002"]  # s001 answers everything right, s002 only the first exercise
TEACHER = "instructor"
PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = secrets.token_urlsafe(12)
#: what the instructor's and the students' steps may take at most (seconds), each
TIMEOUT = 180


def missing_parts() -> list[str]:
    """What the course server needs and this machine lacks, each with how to get it."""
    out = []
    if not PROXY.exists() and shutil.which("configurable-http-proxy") is None:
        out.append(f"configurable-http-proxy ({PROXY} is missing: run `npm ci` in the clone; package.json pins it)")
    if not (BIN / "jupyterhub").exists():
        out.append("jupyterhub (pip install -r requirements-instructor.txt)")
    if shutil.which("bwrap") is None:
        out.append("bubblewrap (apt-get install bubblewrap)")
    return out


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (held together while chosen, so no two are the same)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def run(cmd: list[str], cwd: Path, env: dict) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


class Hub:
    """The hub as a client sees it: its address, and an API token per account got by logging in."""

    def __init__(self, url: str, log: Path) -> None:
        import requests

        self.url, self.log, self.requests = url, log, requests

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-6000:] if self.log.exists() else "(no log)"

    def wait_until_up(self, process: subprocess.Popen) -> None:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            assert process.poll() is None, f"JupyterHub stopped (exit code {process.returncode}):\n{self.log_tail()}"
            with contextlib.suppress(self.requests.ConnectionError):
                if self.requests.get(f"{self.url}/hub/api", timeout=5).ok:
                    return
            time.sleep(0.2)
        raise AssertionError(f"JupyterHub did not answer within {TIMEOUT} s:\n{self.log_tail()}")

    def token(self, user: str) -> str:
        """Log in through the hub's login form with the trial password; a new API token of ``user``."""
        session = self.requests.Session()
        session.get(f"{self.url}/hub/login", timeout=30)
        form = {"username": user, "password": PASSWORD, "_xsrf": session.cookies.get("_xsrf", path="/hub/")}
        done = session.post(f"{self.url}/hub/login", data=form, allow_redirects=False, timeout=30)
        assert done.status_code == 302, f"login of {user}: {done.status_code}\n{self.log_tail()}"
        session.get(f"{self.url}/hub/token", timeout=30)  # the logged-in session's xsrf cookie
        done = session.post(f"{self.url}/hub/api/users/{user}/tokens", json={"note": "test_course_hub", "expires_in": 3600},
                            headers={"X-XSRFToken": session.cookies.get("_xsrf", path="/hub/")}, timeout=30)
        assert done.status_code == 201, f"token of {user}: {done.status_code} {done.text}"
        return done.json()["token"]

    def call(self, method: str, path: str, token: str, expect: int | None = 200, **kw):
        done = self.requests.request(method, f"{self.url}{path}", headers={"Authorization": f"token {token}"}, timeout=TIMEOUT, **kw)
        assert expect is None or done.status_code == expect, f"{method} {path}: {done.status_code} {done.text[:2000]}\n{self.log_tail()}"
        return done

    def start_server(self, user: str, token: str) -> None:
        self.call("POST", f"/hub/api/users/{user}/server", token, expect=None)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            server = self.call("GET", f"/hub/api/users/{user}", token).json()["servers"].get("", {})
            if server.get("ready"):
                return
            time.sleep(0.2)
        raise AssertionError(f"the server of {user} did not start within {TIMEOUT} s:\n{self.log_tail()}")


def answered_copy(fetched: dict, student: str, secret: str, answers: set[str]) -> dict:
    """The fetched notebook with the answer cells ``answers`` filled in with the model answers of ``student``'s seed."""
    nb = nbformat.from_dict(fetched)
    seed = variants.student_seed(student, A, variants.route_key(secret, A, "exchange"))
    source = {nbg(c).get("grade_id"): c for c in source_notebook(A).cells}
    for cell in nb.cells:
        grade_id = nbg(cell).get("grade_id")
        if grade_id in answers:
            cell.source = model_answer(source[grade_id], seed) if cell.cell_type == "code" else "Each token attends to itself."
    return nb


#: run in s002's container, as the hub started it: what the student's server can reach
PROBE = """import json, os, pwd, sys
home, other, hub, course, exchange = sys.argv[1:]
def can(action):
    try:
        action()
        return True
    except OSError:
        return False
print(json.dumps({
    "user": pwd.getpwuid(os.getuid()).pw_name,
    "write own home": can(lambda: open(os.path.join(home, "probe.txt"), "w").write("x")),
    "write exchange": can(lambda: open(os.path.join(exchange, "probe.txt"), "w").write("x")),
    "list other home": can(lambda: os.listdir(other)),
    "read hub database": can(lambda: open(os.path.join(hub, "jupyterhub.sqlite"), "rb").read(1)),
    "read course secret": can(lambda: open(os.path.join(course, "course_secret.txt")).read()),
    "course folder shows": sorted(os.listdir(course)),
}))"""


def probe_container(log: Path, student: str, args: list[str]) -> dict:
    """Run PROBE with the command the hub logged for ``student``'s server, the server's program replaced by Python."""
    lines = [line for line in log.read_text().splitlines() if "Spawning " in line and f"/homes/{student}" in line]
    assert lines, f"the hub logged no command for {student}'s server"
    cmd = shlex.split(lines[-1].split("Spawning ", 1)[1])
    assert cmd[-1].endswith("jupyterhub-singleuser"), cmd
    done = subprocess.run([*cmd[:-1], str(BIN / "python"), "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{cmd}:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


def stop(process: subprocess.Popen, hub_dir: Path) -> None:
    """Stop the hub (it stops its servers and the proxy), then anything of it that outlived it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    pid_file = hub_dir / "jupyterhub-proxy.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.fixture(scope="module")
def hub_round(tmp_path_factory):
    missing = missing_parts()
    assert not missing, "the course server test needs: " + "; ".join(missing)
    began, seconds, cpu_began = time.perf_counter(), {}, cpu_seconds()
    home = tmp_path_factory.mktemp("hub-home")
    page = Page(home)
    course, hub_dir = page.course, home / "course-hub"
    public, internal, proxy_api, grader = free_ports(4)
    out: dict = {"seconds": seconds}
    with throwaway_server() as url:
        page.env["COURSE_GRADEBOOK_URL"] = url  # exported as in the page's section "Many students"
        page.env.pop("COURSE_HUB_TRIAL_PASSWORD", None)
        env = page.env
        run([str(BIN / "python"), str(INSTRUCTOR / "make_assignments.py"), str(course), "--chapters", "1"], home, env)
        (course / "exchange").mkdir()
        (course / "exchange").chmod(0o777)  # as the page's "Setting up" makes it
        (course / "roster.csv").write_text("id\n" + "\n".join(STUDENTS) + "\n")
        hub_env = {**env, "COURSE_DIR": str(course), "COURSE_INSTRUCTORS": TEACHER, "COURSE_HUB_TRIAL_PASSWORD": PASSWORD,
                   "COURSE_HUB_PORT": str(public), "COURSE_HUB_INTERNAL_PORT": str(internal),
                   "COURSE_HUB_PROXY_API_PORT": str(proxy_api), "COURSE_HUB_FORMGRADER_PORT": str(grader)}
        lang, code = page.blocks["instructors-hub-start"]
        log = home / "hub.log"
        with open(log, "w") as fh:
            process = subprocess.Popen(["bash", "-e", "-c", code], cwd=home, env=hub_env, stdout=fh, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        page.ran.add("instructors-hub-start")
        hub = Hub(f"http://127.0.0.1:{public}", log)
        try:
            # while the hub starts: the gradebook's roster, and ch01 released through the exchange (step 2b of the page)
            for command in (["nbgrader", "db", "student", "import", "roster.csv"], ["nbgrader", "generate_assignment", A],
                            ["python", str(INSTRUCTOR / "course.py"), "release", A, "--exchange"], ["nbgrader", "release_assignment", A]):
                run(command, course, env)
            hub.wait_until_up(process)
            seconds["hub up"] = time.perf_counter() - began
            users = [*STUDENTS, TEACHER]
            with ThreadPoolExecutor(len(users)) as pool:
                tokens = dict(zip(users, pool.map(hub.token, users), strict=True))
                list(pool.map(lambda s: hub.start_server(s, tokens[s]), STUDENTS))
            seconds["servers up"] = time.perf_counter() - began
            homes = hub_dir / "homes"
            out["container"] = probe_container(log, "s002", [str(homes / "s002"), str(homes / "s001"), str(hub_dir), str(course),
                                                             str(course / "exchange")])
            secret = (course / "course_secret.txt").read_text().strip()
            answers = {"s001": {"ch01-ex1-answer", "ch01-ex2-answer", "ch01-ex3-written"}, "s002": {"ch01-ex1-answer"}}
            out["listed"], out["submitted"] = {}, {}
            for student in STUDENTS:
                token, base = tokens[student], f"/user/{student}"
                out["listed"][student] = hub.call("GET", f"{base}/assignments", token, params={"course_id": COURSE}).json()
                hub.call("POST", f"{base}/assignments/fetch", token, data={"course_id": COURSE, "assignment_id": A})
                fetched = hub.call("GET", f"{base}/api/contents/{A}/{A}.ipynb", token).json()["content"]
                nb = answered_copy(fetched, student, secret, answers[student])
                hub.call("PUT", f"{base}/api/contents/{A}/{A}.ipynb", token, json={"type": "notebook", "format": "json", "content": nb})
                out["submitted"][student] = hub.call("POST", f"{base}/assignments/submit", token,
                                                     data={"course_id": COURSE, "assignment_id": A}).json()
            seconds["submitted"] = time.perf_counter() - began
            cpu_before = cpu_seconds()
            out["grading"] = page.run("instructors-hub-grade", cwd=home)
            seconds["graded, feedback released"] = time.perf_counter() - began
            grading_cpu = cpu_seconds() - cpu_before  # every process of the block has ended
            grader_api = f"/services/{COURSE}/formgrader/api"
            out["formgrader"] = hub.call("GET", f"{grader_api}/submissions/{A}", tokens[TEACHER]).json()
            out["student_at_formgrader"] = hub.call("GET", f"{grader_api}/submissions/{A}", tokens["s001"], expect=None).status_code
            # and a student's own server has no formgrader of its own (instructor/hub/student/jupyter_server_config.py)
            out["own_formgrader"] = hub.call("GET", "/user/s001/formgrader/api/status", tokens["s001"], expect=None).status_code
            out["own_courses"] = hub.call("GET", "/user/s001/courses", tokens["s001"]).json()
            lab = hub.call("GET", "/user/s001/lab", tokens["s001"]).text
            found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', lab, re.S)
            assert found, lab[:3000]
            disabled = json.loads(found.group(1)).get("disabledExtensions", [])
            out["lab_disabled"] = sorted(k for k in disabled if not isinstance(disabled, dict) or disabled[k])
            out["feedback"] = {}
            for student in STUDENTS:
                token, base = tokens[student], f"/user/{student}"
                hub.call("POST", f"{base}/assignments/fetch_feedback", token, data={"course_id": COURSE, "assignment_id": A})
                folder = hub.call("GET", f"{base}/api/contents/{A}/feedback", token).json()["content"]
                assert len(folder) == 1, folder
                page_path = f"{folder[0]['path']}/{A}.html"
                out["feedback"][student] = hub.call("GET", f"{base}/api/contents/{page_path}", token).json()["content"]
            out["gradebook"] = gradebook_scores(url)
            out["homes"] = {s: sorted(p.name for p in (hub_dir / "homes" / s).iterdir()) for s in STUDENTS}
        finally:
            stop(process, hub_dir)
        out["log"] = log.read_text(errors="replace")
    seconds["whole fixture"] = time.perf_counter() - began
    out["ran"] = page.ran
    cpu = cpu_seconds() - cpu_began  # the hub and everything it started have ended and been waited for
    print(f"\ncourse hub: {({k: round(v, 1) for k, v in seconds.items()})} s wall, {cpu:.1f} s CPU of this process and "
          f"every process it started, {grading_cpu:.1f} s of it the grading block's (load average {os.getloadavg()})")
    return out


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def gradebook_scores(url: str) -> dict[str, tuple[float, float]]:
    """Student id -> (score, maximum) of ch01 in the gradebook at ``url``."""
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id=COURSE) as gb:
        return {s.student.id: (s.score, s.max_score) for s in gb.find_assignment(A).submissions}


def feedback_score(page: str) -> tuple[float, float]:
    found = re.search(rf"<h4>{A} \(Score: ([\d.]+) / ([\d.]+)\)</h4>", page)
    assert found, page[:3000]
    return float(found.group(1)), float(found.group(2))


def auto_points() -> float:
    """The autograded points of ch01 (its test cells); the written answer is graded by hand."""
    return sum(nbg(c)["points"] for c in source_notebook(A).cells if nbg(c).get("grade") and not nbg(c).get("solution"))


@pytest.mark.slow
def test_each_student_reads_in_their_feedback_the_score_the_postgresql_gradebook_holds(hub_round):
    scores = {s: feedback_score(hub_round["feedback"][s]) for s in STUDENTS}
    assert scores == hub_round["gradebook"], (scores, hub_round["gradebook"])
    (s001, top), (s002, _) = scores["s001"], scores["s002"]
    assert s001 == auto_points() < top  # every autograded point; the written answer waits for a grader
    assert 0 < s002 < s001, scores


@pytest.mark.slow
def test_students_see_the_course_fetch_and_submit_under_their_hub_names(hub_round):
    for student in STUDENTS:
        listed = hub_round["listed"][student]
        assert listed["success"], listed
        assert [(a["course_id"], a["assignment_id"], a["status"]) for a in listed["value"]] == [(COURSE, A, "released")]
        submitted = hub_round["submitted"][student]
        assert submitted["success"], submitted
        assert {a["status"] for a in submitted["value"]} == {"fetched", "submitted"}, submitted
        assert A in hub_round["homes"][student]


@pytest.mark.slow
def test_a_students_server_runs_as_jovyan_and_sees_of_the_course_only_its_home_and_the_exchange(hub_round):
    assert hub_round["container"] == {
        "user": "jovyan",
        "write own home": True,
        "write exchange": True,
        "list other home": False,
        "read hub database": False,
        "read course secret": False,
        "course folder shows": ["exchange"],  # an empty folder, with the exchange put into it
    }


@pytest.mark.slow
def test_the_formgrader_is_a_hub_service_for_the_instructors_only(hub_round):
    graded = {s["student"]: s["score"] for s in hub_round["formgrader"]}
    assert graded == {s: hub_round["gradebook"][s][0] for s in STUDENTS}
    assert hub_round["student_at_formgrader"] == 403
    assert hub_round["own_formgrader"] == 404  # not loaded in students' servers
    assert hub_round["own_courses"] == {"success": True, "value": [COURSE]}  # the assignment list is
    nbgrader_lab = {name for name in hub_round["lab_disabled"] if name.startswith("@jupyter/nbgrader:")}
    assert nbgrader_lab == {f"@jupyter/nbgrader:{n}" for n in ("formgrader", "course-list", "create-assignment")}, hub_round["lab_disabled"]


@pytest.mark.slow
def test_grading_ran_in_parallel_workers_into_postgresql(hub_round):
    assert f"{A}: 2 graded, 0 unchanged since graded, 0 failed" in hub_round["grading"], hub_round["grading"]


@pytest.mark.slow
def test_the_pages_blocks_for_the_course_server_run_here(hub_round):
    assert hub_round["ran"] == {name for name, why in RUN_ELSEWHERE.items() if why.startswith("test_course_hub.py")}


def test_a_missing_proxy_is_named_with_the_command_that_installs_it(tmp_path):
    """The hub configuration stops before starting anything, naming ``npm ci``, when configurable-http-proxy is absent."""
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n")
    (course / "roster.csv").write_text("id\ns001\n")
    hidden = tmp_path / "bin"
    hidden.mkdir()
    for tool in ("bwrap", "setpriv"):
        if shutil.which(tool):
            (hidden / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(hidden), "HOME": str(tmp_path), "COURSE_DIR": str(course), "COURSE_HUB_TRIAL_PASSWORD": PASSWORD}
    config = tmp_path / "clone" / "instructor" / "hub"
    shutil.copytree(INSTRUCTOR / "hub", config)  # a clone without node_modules/
    done = subprocess.run([str(BIN / "python"), str(BIN / "jupyterhub"), "-f", str(config / "jupyterhub_config.py"),
                           "--JupyterHub.port=1"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "configurable-http-proxy is not installed: run `npm ci`" in done.stdout + done.stderr, done.stdout + done.stderr
