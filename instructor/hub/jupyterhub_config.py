"""JupyterHub for one course of the book, with nbgrader: instructors.md, section "A course server".

Start it in the hub's own folder (its database, cookie secret and the students' home folders go there):

    jupyterhub -f $BOOK/instructor/hub/jupyterhub_config.py

It reads these environment variables:

COURSE_DIR
    The course folder made by ``instructor/make_assignments.py`` (default ``~/attention-course``). Its
    ``roster.csv`` lists the students (the hub group ``nbgrader-deriving-attention``); its exchange folder
    (``c.Exchange.root`` there, ``COURSE_DIR/exchange`` by default) is the one the students' servers use.
COURSE_INSTRUCTORS
    The hub accounts of the instructors and graders, comma-separated (default ``instructor``): the group
    ``formgrade-deriving-attention``, whose members reach the course's formgrader service.
COURSE_HUB_TRIAL_PASSWORD
    The one password of the trial login (at least 8 characters; required). Replace the trial login by your
    institution's (below) before students use the hub.
COURSE_HUB_IP, COURSE_HUB_PORT
    Where the hub is reached (default ``127.0.0.1`` and ``8000``).
COURSE_HUB_INTERNAL_PORT, COURSE_HUB_PROXY_API_PORT, COURSE_HUB_FORMGRADER_PORT
    Ports on 127.0.0.1 of the hub itself, of the proxy's API and of the formgrader service (defaults 8081,
    8001 and 9999).
COURSE_GRADEBOOK_URL
    Passed on to the formgrader service when set (the PostgreSQL gradebook of instructors.md).

What this file does not set up (TLS, a real login, a real spawner) is in instructors.md.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import sys
from pathlib import Path

from jupyterhub.spawner import SimpleLocalProcessSpawner

c = get_config()  # noqa: F821 (JupyterHub provides get_config)

#: the course id of instructor/make_assignments.py; the formgrader service must carry the course's id as its name
COURSE = "deriving-attention"
HERE = Path(__file__).resolve().parent
HUB_DIR = Path.cwd()
COURSE_DIR = Path(os.environ.get("COURSE_DIR") or Path.home() / "attention-course").resolve()
BIN = Path(sys.executable).parent


def fail(message: str) -> None:
    """Stop the hub before it starts, with a message that names what to fix.

    Raises
    ------
    SystemExit
        Always, with ``message`` after this file's path.
    """
    sys.exit(f"{__file__}: {message}")


def exchange_root(course: Path) -> Path:
    """The course's exchange folder: ``c.Exchange.root`` of its nbgrader_config.py, else ``COURSE_DIR/exchange``.

    Raises
    ------
    OSError
        If the course's ``nbgrader_config.py`` cannot be read.
    """
    found = re.search(r"^c\.Exchange\.root\s*=\s*(['\"])(.+?)\1\s*$", (course / "nbgrader_config.py").read_text(), re.M)
    return Path(found.group(2)) if found else course / "exchange"


def port(name: str, default: int) -> int:
    """The port in the environment variable ``name``, else ``default``.

    Raises
    ------
    SystemExit
        If the variable holds anything but a port number from 1 to 65535 (the message names the variable).
    """
    text = os.environ.get(name) or str(default)
    if not text.isdigit() or not 0 < int(text) < 65536:
        fail(f"{name} must be a port number from 1 to 65535, not {text!r}")
    return int(text)


if not (COURSE_DIR / "nbgrader_config.py").is_file() or not (COURSE_DIR / "roster.csv").is_file():
    fail(f"COURSE_DIR {str(COURSE_DIR)!r} is not a course folder with a roster.csv (instructors.md, 'Setting up')")
with open(COURSE_DIR / "roster.csv", newline="") as fh:
    STUDENTS = [row["id"].strip() for row in csv.DictReader(fh) if row.get("id", "").strip()]
INSTRUCTORS = [name.strip() for name in os.environ.get("COURSE_INSTRUCTORS", "instructor").split(",") if name.strip()]
PASSWORD = os.environ.get("COURSE_HUB_TRIAL_PASSWORD", "")
if len(PASSWORD) < 8:
    fail("COURSE_HUB_TRIAL_PASSWORD must hold the trial login's password, at least 8 characters")
EXCHANGE = exchange_root(COURSE_DIR)
#: the proxy of `npm ci` in the clone, else one on PATH
PROXY = shutil.which(str(HERE.parents[1] / "node_modules" / ".bin" / "configurable-http-proxy")) or shutil.which("configurable-http-proxy")
if PROXY is None:
    fail("configurable-http-proxy is not installed: run `npm ci` in the book's clone (package.json pins it), "
         "or `npm install -g configurable-http-proxy`")
BWRAP = shutil.which("bwrap")
#: what a student's server runs from (the book's clone, its Python environment) when it lies under /tmp,
#: which the container replaces by an empty folder of its own: shown to it read-only again
NEEDED_UNDER_TMP = sorted(
    {p for p in (HERE.parents[1], Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()) if Path("/tmp") in p.parents},
    key=lambda p: len(p.parts),
)
if BWRAP is None or (os.geteuid() == 0 and shutil.which("setpriv") is None):
    fail("the students' servers run in a bubblewrap container: install bubblewrap and util-linux (apt-get install bubblewrap)")

# --- Where the hub listens: the proxy on COURSE_HUB_IP:COURSE_HUB_PORT, everything else on 127.0.0.1 only.
c.JupyterHub.ip = os.environ.get("COURSE_HUB_IP") or "127.0.0.1"
c.JupyterHub.port = port("COURSE_HUB_PORT", 8000)
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = port("COURSE_HUB_INTERNAL_PORT", 8081)
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port('COURSE_HUB_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [PROXY]
c.JupyterHub.cookie_secret_file = str(HUB_DIR / "jupyterhub_cookie_secret")
c.JupyterHub.db_url = f"sqlite:///{HUB_DIR / 'jupyterhub.sqlite'}"

# --- Who logs in: the trial login, one shared password for the roster and the instructors.
# Replace these two lines by your institution's login (OAuthenticator, LTI): instructors.md says how.
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = PASSWORD
c.Authenticator.allowed_users = set(STUDENTS) | set(INSTRUCTORS)

# --- The course's groups: nbgrader's JupyterHubAuthPlugin shows a course's assignments to the members of
# nbgrader-<course> (the roster) and its formgrader to the members of formgrade-<course> (the instructors).
c.JupyterHub.load_groups = {f"nbgrader-{COURSE}": {"users": STUDENTS}, f"formgrade-{COURSE}": {"users": INSTRUCTORS}}
c.JupyterHub.load_roles = [
    # each server's own token may read its user's groups: the plugin asks the hub which courses its user takes
    {"name": "server", "scopes": ["users:activity!user", "access:servers!server", "read:users:name!user", "read:users:groups!user"]},
    {"name": f"formgrade-{COURSE}", "groups": [f"formgrade-{COURSE}"], "scopes": [f"access:services!service={COURSE}"]},
    {"name": f"nbgrader-{COURSE}", "groups": [f"nbgrader-{COURSE}"], "scopes": ["list:services", f"read:services!service={COURSE}"]},
]

# --- The formgrader: a Jupyter server in the course folder, as a hub service named after the course, that only
# the instructors reach (at /services/deriving-attention/). It runs as the hub's own account, which owns the course.
grader_env = {"JUPYTERHUB_DEFAULT_URL": "/lab", "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
if os.environ.get("COURSE_GRADEBOOK_URL"):
    grader_env["COURSE_GRADEBOOK_URL"] = os.environ["COURSE_GRADEBOOK_URL"]
c.JupyterHub.services = [
    {
        "name": COURSE,
        "url": f"http://127.0.0.1:{port('COURSE_HUB_FORMGRADER_PORT', 9999)}",
        # as root (the trial's one account): Jupyter refuses root unless told; give the service an account of its own
        "command": [str(BIN / "jupyterhub-singleuser"), *(["--allow-root"] if os.geteuid() == 0 else [])],
        "cwd": str(COURSE_DIR),
        "environment": grader_env,
        "oauth_no_confirm": True,
    }
]


class CourseSpawner(SimpleLocalProcessSpawner):
    """Each student's Jupyter server in a bubblewrap container of its own, as the user ``jovyan``.

    As in the Docker images of Zero to JupyterHub, the server runs as ``jovyan``, so nbgrader files each
    submission under ``JUPYTERHUB_USER``, the hub account. It sees the machine read-only, its own home
    folder (``homes/<name>`` in the hub's folder) and the course's exchange read-write, and neither the
    other homes, the hub's database nor the course folder. As root it runs under a user id of its own.
    """

    def start(self):
        """Start the server in its container (the command below, then the local process spawner's start).

        Raises
        ------
        OSError
            If the home folder cannot be made or handed to the server's user id.
        """
        home = Path(self.home_dir)
        home.mkdir(parents=True, exist_ok=True)
        uid = None
        if os.geteuid() == 0:  # a user id per account, which owns its home and nothing else
            uid = 61000 + sorted(set(STUDENTS) | set(INSTRUCTORS)).index(self.user.name)
            for path in [home, *home.rglob("*")]:
                os.lchown(path, uid, uid)
        inside = uid if uid is not None else 1000
        passwd = HUB_DIR / "homes" / f".passwd-{self.user.name}"
        passwd.write_text(f"root:x:0:0:root:/root:/bin/sh\njovyan:x:{inside}:{inside}::{home}:/bin/bash\n")
        cmd = [BWRAP, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if uid is None:
            cmd += ["--unshare-user", "--uid", str(inside), "--gid", str(inside)]
        cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]
        for needed in NEEDED_UNDER_TMP:  # the fresh /tmp above would hide them
            cmd += ["--ro-bind", str(needed), str(needed)]
        for hidden in sorted({HUB_DIR, COURSE_DIR}, key=lambda p: len(p.parts)):
            cmd += ["--tmpfs", str(hidden)]
        for folder in (EXCHANGE, home):
            for parent in reversed(folder.parents[:-1]):  # the folders above it, inside a hidden one: passable
                cmd += ["--perms", "0755", "--dir", str(parent)]
            cmd += ["--bind", str(folder), str(folder)]
        cmd += ["--ro-bind", str(passwd), "/etc/passwd"]
        cmd += ["--chdir", str(home)]
        if uid is not None:
            cmd += [shutil.which("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                    "--bounding-set=-all", "--no-new-privs", "--"]
        self.cmd = [*cmd, str(BIN / "jupyterhub-singleuser")]
        return super().start()


c.JupyterHub.spawner_class = CourseSpawner
c.CourseSpawner.home_dir_template = str(HUB_DIR / "homes" / "{username}")
c.Spawner.default_url = "/lab"
# the students' nbgrader: this folder's student/ configuration (the exchange, the course's groups, no instructor tools)
c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": str(HERE / "student"),
    "COURSE_EXCHANGE": str(EXCHANGE),
    "PATH": f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
}
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
